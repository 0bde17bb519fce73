"""Recall's search step: the candidate rows a strategy ranks (docs/recall.md).

:func:`pool` is the N nearest rows in scope (exact, sketches, cells or HNSW by the scope's
size); :func:`search_grouped` is ``grouped``'s per-category top K, completing from the pool
what a category lacks. Both run on the connection the caller chose (primary or replica).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection

from eros.core.categories import CATEGORIES
from eros.recall.core.cells import probe_count
from eros.recall.core.ranking import Candidate
from eros.recall.db import cells_sql
from eros.recall.db import recall_hnsw_sql as hnsw_sql
from eros.recall.db import recall_sql as sql
from eros.recall.db.recall_sql import ScopeFilter
from eros.recall.services.recall_plan import choose_search, count_kwargs, hnsw_params, sketches
from eros.settings import Settings

#: ``models``: a user on several embedding models, one search each (recall_models.py).
Plan = Literal["exact", "quantized", "cells", "hnsw", "mixed", "models"]


@dataclass(frozen=True)
class Found:
    candidates: list[Candidate]
    plan: Plan
    #: every candidate came from an exact scan (no HNSW approximation in the answer).
    exact: bool
    #: every row in scope is among the candidates (the pool is the whole scope).
    complete: bool = False
    #: an HNSW scan came back short and was redone exactly.
    fallback: bool = False


def _timed(timings: dict[str, float], name: str, started: float) -> None:
    timings[name] = timings.get(name, 0.0) + (time.perf_counter() - started) * 1000


def _sketch_pool(conn: Connection, flt: ScopeFilter, query: list[float], n: int, cells: int,
                 cfg: Settings, in_scope: int) -> tuple[list[Candidate], Plan]:
    """The quantised search: over the cells nearest the query when the user has cells
    (``eros.cluster_memories``) and RECALL_CELL_PROBE_SHARE is below 1, else every sketch.

    Cells are cut over all of a user's layers, so the nearest ones may hold few or none of a
    persona's rows: a probe that comes back with fewer rows than the scope has (up to ``n``)
    is re-run over every sketch in scope, so the K that exist are returned in every scope.
    """
    if cells and cfg.recall_cell_probe_share < 1:
        probes = probe_count(cells, cfg.recall_cell_probe_share)
        rows = cells_sql.probed_pool(conn, flt, query, n, sketches(n, cfg), probes)
        if len(rows) >= min(n, in_scope):
            return rows, "cells"
    return sql.quantized_pool(conn, flt, query, n, sketches(n, cfg)), "quantized"


def pool(conn: Connection, flt: ScopeFilter, query: list[float], n: int, cfg: Settings,
          timings: dict[str, float]) -> Found:
    """The ``n`` nearest rows in scope — exact for a small scope, else by sketches (or HNSW
    with an iterative scan, re-run exactly if the scan came back short)."""
    t = time.perf_counter()
    size = sql.scope_count(conn, flt, **count_kwargs(cfg, n))
    _timed(timings, "count", t)
    t = time.perf_counter()
    try:
        if size.rows == 0:
            return Found([], "exact", True, complete=True)
        how = choose_search(size.rows, n, size.table_rows, cfg)
        if how == "exact":
            rows = sql.exact_pool(conn, flt, query, n)
            return Found(rows, "exact", True, complete=len(rows) < n)
        if how == "quantized":
            rows, plan = _sketch_pool(conn, flt, query, n, size.cells, cfg, size.rows)
            return Found(rows, plan, False)
        rows = hnsw_sql.hnsw_pool(conn, flt, query, n, hnsw_params(cfg))
        if len(rows) >= n:
            return Found(rows, "hnsw", False)
        rows = sql.exact_pool(conn, flt, query, n)  # the scan gave up early: be exact
        return Found(rows, "mixed", True, complete=len(rows) < n, fallback=True)
    finally:
        _timed(timings, "search", t)


def search_grouped(conn: Connection, flt: ScopeFilter, query: list[float], k: int, n: int,
                    cfg: Settings, timings: dict[str, float]) -> Found:
    """The ``k`` nearest rows of every category (the original dreaming-lite answer, filter-safe).

    A small scope: one exact scan with ``row_number()`` per category. A large one: the pool
    of the ``n`` nearest rows in scope (quantised or HNSW), grouped — a category with at least
    ``k`` rows in the pool has its true top ``k`` there, since every row outside is farther
    than every row inside. Only categories the pool holds fewer than ``k`` of (rare ones) are
    searched again, each exactly or by its own quantised or HNSW scan, as its size says.
    """
    t = time.perf_counter()
    size = sql.scope_count(conn, flt, **count_kwargs(cfg, n))
    _timed(timings, "count", t)
    t = time.perf_counter()
    if size.rows == 0:
        _timed(timings, "search", t)
        return Found([], "exact", True)
    how = choose_search(size.rows, n, size.table_rows, cfg)
    if how == "exact":
        found = sql.exact_grouped(conn, flt, query, CATEGORIES, k)
        _timed(timings, "search", t)
        return Found(found, "exact", True)
    plan: Plan = how
    if how == "quantized":
        pool, plan = _sketch_pool(conn, flt, query, n, size.cells, cfg, size.rows)
    else:
        pool = hnsw_sql.hnsw_pool(conn, flt, query, n, hnsw_params(cfg))
    if len(pool) < n:  # the scan gave up early: be exact
        found = sql.exact_grouped(conn, flt, query, CATEGORIES, k)
        _timed(timings, "search", t)
        return Found(found, "mixed", True, fallback=True)
    have = Counter(c.category for c in pool)
    missing: list[str] = [c for c in CATEGORIES if have[c] < k]
    _timed(timings, "search", t)
    if not missing:
        return Found(pool, plan, False)
    if plan == "cells":
        t = time.perf_counter()
        extra, fallback = _complete_in_cells(conn, flt, query, missing, pool, k, cfg,
                                             size.cells), False
        _timed(timings, "search", t)
    else:
        extra, fallback = _complete(conn, flt, query, missing, have, k, cfg, timings)
    return Found(pool + extra, "mixed", False, fallback=fallback)


def _complete_in_cells(conn: Connection, flt: ScopeFilter, query: list[float],
                       missing: list[str], pool: list[Candidate], k: int, cfg: Settings,
                       cells: int) -> list[Candidate]:
    """The top ``k`` of the categories a clustered user's pool held fewer than ``k`` of: each
    walked cell by cell, nearest first, for a bounded number of rows — no count first (a
    category with no more rows comes back with what the pool has, dropped here). Counting
    and scanning the category's whole range first was what set grouped recall's tail."""
    seen = {c.id for c in pool}
    found = cells_sql.probed_grouped(conn, flt, query, missing, k, sketches(k, cfg),
                                     probe_count(cells, cfg.recall_cell_probe_share))
    return [c for c in found if c.id not in seen]


def _complete(conn: Connection, flt: ScopeFilter, query: list[float], missing: list[str],
              have: Counter[str], k: int, cfg: Settings, timings: dict[str, float]
              ) -> tuple[list[Candidate], bool]:
    """The top ``k`` of categories the pool held fewer than ``k`` of, each by its size."""
    t = time.perf_counter()
    counts = sql.category_counts(conn, flt, missing, **count_kwargs(cfg, k))
    _timed(timings, "count", t)
    t = time.perf_counter()
    # a category whose every row is already in the pool needs nothing more
    more = [c for c in missing if counts.per_category.get(c, 0) > have[c]]
    how = {c: choose_search(counts.per_category[c], k, counts.table_rows, cfg) for c in more}
    exact = [c for c in more if how[c] == "exact"]
    quantized = [c for c in more if how[c] == "quantized"]
    hnsw = [c for c in more if how[c] == "hnsw"]
    found = sql.exact_grouped(conn, flt, query, exact, k) if exact else []
    if quantized:
        found += sql.quantized_grouped(conn, flt, query, quantized, k, sketches(k, cfg))
    fallback = False
    if hnsw:
        near = hnsw_sql.hnsw_grouped(conn, flt, query, hnsw, k, hnsw_params(cfg))
        got = Counter(c.category for c in near)
        short = [c for c in hnsw if got[c] < k]
        found += [c for c in near if c.category not in short]
        if short:
            fallback = True
            found += sql.exact_grouped(conn, flt, query, short, k)
    _timed(timings, "search", t)
    return found, fallback
