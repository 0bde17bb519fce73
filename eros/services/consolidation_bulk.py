"""The first consolidation pass over a large backlog as a bulk operation (issue 34).

A clustered user's per-memory search (:func:`eros.db.cells_sql.cell_pairs`) reads, for every
memory, the sketches of its CONSOLIDATION_CELL_PROBES nearest cells: ~8·√n rows a memory, so a
first pass over n memories grows as n^1.5. Here the same predicate — same user, layer and
category, current, in one of the memory's probed cells or in no cell, within the sketch's
Hamming bound, then the exact check — is evaluated for ALL the user's current memories at once:
one statement reads every sketch and each memory's probed cells (the centroids once), each
(cell, layer, category) group's sketches are compared with the memories that probe that cell
in one vectorised block, and the candidates are checked exactly in a few statements.

The passes then run as today, chunk after chunk (same pages, same clusters, same model calls,
same bounded write transactions under the per-user lock and claim): only the read of each
chunk's pairs comes from the bulk result instead of the per-memory probes, so the decisions are
today's (``tests/integration/test_consolidation_bulk.py`` compares them on the bench corpus).
Pairs are directed (a memory's search may find a twin whose own search does not find it), kept
only while both ends are still current; the canonical rows a pass writes are checked against
the later chunks' memories with the same predicate, and a memory the bulk read did not see
(written since) is searched per memory, as today. A crash loses nothing: every chunk commits on
its own and the backlog is the cursor; a new run reads again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
from sqlalchemy import Connection, Engine

from eros.core.consolidation import Pair, components
from eros.db import consolidation_bulk_sql as bulk_sql
from eros.db import consolidation_sql as sql
from eros.db import consolidation_state_sql as state_sql
from eros.db.consolidation_bulk_sql import Sketches
from eros.db.timeouts import set_statement_timeout
from eros.services.consolidate import ConsolidationReport, Consolidator, consolidate
from eros.services.consolidation_read import PAGE, Read, choose_search, search_pairs
from eros.settings import Settings

#: a block of one group's comparisons holds at most this many (memory, row) pairs at a time.
_BLOCK = 1 << 21


@dataclass
class Neighbours:
    """What the bulk read found: each searched memory's near rows (directed), and what the
    later chunks need to check rows written since against the same memories."""

    user_id: uuid.UUID
    searched: Sketches
    index: dict[uuid.UUID, int]
    near: dict[uuid.UUID, list[uuid.UUID]]
    max_hamming: int
    max_distance: float
    #: rows written since the read (canonical rows of this run's passes)
    late: list[uuid.UUID] = field(default_factory=list)
    #: milliseconds of the bulk read
    read_ms: float = 0.0


def _scope_codes(*groups: Sketches) -> list[np.ndarray]:
    codes: dict[tuple[uuid.UUID | None, str], int] = {}
    return [np.array([codes.setdefault(s, len(codes)) for s in g.scopes], dtype=np.int64)
            for g in groups]


def _groups(keys: np.ndarray) -> dict[int, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    bounds = np.flatnonzero(np.diff(ordered)) + 1
    starts, ends = np.r_[0, bounds], np.r_[bounds, len(ordered)]
    return {int(ordered[s]): order[s:e] for s, e in zip(starts, ends, strict=True)}


def candidates(searched: Sketches, rows: np.ndarray, targets: Sketches, max_hamming: int
               ) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """(a, b) with a among ``searched[rows]``, b in ``targets``: same layer and category, b
    in one of a's probed cells or in none, sketches within ``max_hamming`` bits, b ≠ a."""
    if not len(rows) or not targets.ids:
        return [], []
    assert searched.probes is not None
    scope_a, scope_b = _scope_codes(searched, targets)
    width = int(max(scope_a.max(initial=0), scope_b.max(initial=0))) + 1
    # cell c → key (c + 1)·width + scope; "no cell" (-1) is key 0·width + scope
    by_key = _groups((targets.cells + 1) * width + scope_b)
    probes = np.concatenate([searched.probes[rows], np.full((len(rows), 1), -1)], axis=1)
    keys = (probes + 1) * width + scope_a[rows][:, None]
    keep = probes >= -1
    owners = np.broadcast_to(rows[:, None], probes.shape)[keep]
    out_a: list[uuid.UUID] = []
    out_b: list[uuid.UUID] = []
    same = searched is targets
    for key, members in _groups(keys[keep]).items():
        b_rows = by_key.get(key)
        if b_rows is None:
            continue
        a_rows = owners[members]
        step = max(1, _BLOCK // len(b_rows))
        b_words = targets.words[b_rows]
        for start in range(0, len(a_rows), step):
            part = a_rows[start:start + step]
            bits = np.bitwise_count(searched.words[part][:, None, :] ^ b_words[None, :, :])
            hit = bits.sum(axis=2, dtype=np.int32) <= max_hamming
            if same:
                hit &= part[:, None] != b_rows[None, :]
            ai, bj = np.nonzero(hit)
            out_a.extend(searched.ids[i] for i in part[ai])
            out_b.extend(targets.ids[j] for j in b_rows[bj])
    return out_a, out_b


def bulk_neighbours(conn: Connection, s: Settings, user_id: uuid.UUID) -> Neighbours:
    """Every current memory's near rows by the clustered user's cells search, at once."""
    started = time.perf_counter()
    max_distance = 1.0 - s.consolidation_similarity
    hamming = sql.max_hamming(s.consolidation_similarity, s.embedding_dim)
    searched = bulk_sql.current_sketches(conn, user_id, probes=s.consolidation_cell_probes)
    a, b = candidates(searched, np.arange(len(searched.ids)), searched, hamming)
    near: dict[uuid.UUID, list[uuid.UUID]] = {}
    for x, y in bulk_sql.check_pairs(conn, a, b, max_distance=max_distance):
        near.setdefault(x, []).append(y)
    return Neighbours(user_id, searched, {i: n for n, i in enumerate(searched.ids)}, near,
                      hamming, max_distance,
                      read_ms=round((time.perf_counter() - started) * 1000, 1))


def _pairs(conn: Connection, nb: Neighbours, s: Settings, ids: Sequence[uuid.UUID]
           ) -> list[Pair]:
    """The pairs today's search finds from ``ids``, from the bulk result where it covers
    them (rows still current), per memory where it does not."""
    known = [i for i in ids if i in nb.index]
    unknown = [i for i in ids if i not in nb.index]
    found: list[Pair] = [(i, j) for i in known for j in nb.near.get(i, ())]
    if nb.late and known:
        late = bulk_sql.sketches_by_id(conn, nb.late)
        rows = np.array([nb.index[i] for i in known], dtype=np.int64)
        a, b = candidates(nb.searched, rows, late, nb.max_hamming)
        found += bulk_sql.check_pairs(conn, a, b, max_distance=nb.max_distance)
    current = bulk_sql.current_of(conn, sorted({j for _, j in found}, key=str))
    pairs = [p for p in found if p[1] in current]
    if unknown:
        pairs += search_pairs(conn, nb.user_id, unknown, s, search="cells")
    return sql.unique_pairs(pairs)


def read_chunk(engine: Engine, s: Settings, nb: Neighbours) -> Read:
    """:func:`eros.services.consolidation_read.read_new` with the bulk result as the search:
    the same pages, the same stop, the same REPEATABLE READ snapshot for rows and claim."""
    user_id = nb.user_id
    with engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        if s.consolidation_statement_timeout_ms:
            set_statement_timeout(conn, s.consolidation_statement_timeout_ms)
        search = choose_search(conn, user_id, s)
        chunk: list[uuid.UUID] = []
        pairs: set[Pair] = set()
        after: tuple[datetime, uuid.UUID] | None = None
        while len(chunk) < s.consolidation_chunk_size:
            want = min(PAGE, s.consolidation_chunk_size - len(chunk))
            page = sql.uncompared_page(conn, user_id, want, after)
            if not page:
                break
            ids = [i for i, _ in page]
            chunk.extend(ids)
            after = (page[-1][1], page[-1][0])
            pairs.update(_pairs(conn, nb, s, ids) if search == "cells"
                         else search_pairs(conn, user_id, ids, s, search=search))
            if len(page) < want or components(pairs) >= s.consolidation_max_clusters:
                break
        affected = {*chunk, *(i for p in pairs for i in p)}
        memories = sql.rows_by_id(conn, sorted(affected, key=str))
        claim = state_sql.claimed_at(conn, user_id)
    return Read(memories, sorted(pairs, key=lambda p: (str(p[0]), str(p[1]))), chunk, claim,
                search)


def bulk_due(conn: Connection, s: Settings, user_id: uuid.UUID) -> bool:
    """The bulk read pays off: a backlog of more than one chunk and at least 1/20 of the
    user's current memories (the bulk read costs about the per-memory search of 1/20 of
    them), of a clustered user ("cells" search). The backlog is counted first (capped): an
    incremental pass pays one small count."""
    backlog = bulk_sql.backlog_count(conn, user_id, cap=s.consolidation_chunk_size + 1)
    if backlog <= s.consolidation_chunk_size:
        return False
    backlog = bulk_sql.backlog_count(conn, user_id, cap=1 << 30)
    if sql.current_count(conn, user_id, cap=20 * backlog + 1) > 20 * backlog:
        return False
    return choose_search(conn, user_id, s) == "cells"


def combined(reports: Sequence[ConsolidationReport]) -> ConsolidationReport:
    """One report for a run of passes: the last pass's outcome and backlog, the counts summed,
    the share before the first pass and after the last."""
    last = replace(reports[-1])
    for name in ("compared", "merged", "superseded", "canonical_written", "steps_skipped",
                 "llm_calls", "embedding_calls", "prompt_tokens", "completion_tokens",
                 "embedding_tokens", "clusters", "clusters_sent"):
        setattr(last, name, sum(getattr(r, name) for r in reports))
    last.share_before = reports[0].share_before
    last.timings = {k: round(sum(r.timings.get(k, 0.0) for r in reports), 3)
                    for k in {k for r in reports for k in r.timings}}
    return last


def first_pass(c: Consolidator, user_id: uuid.UUID, *,
               new_id: Callable[[], uuid.UUID] = uuid.uuid4, budget_secs: float | None = None,
               force: bool = False) -> list[ConsolidationReport]:
    """Passes over the user's backlog until it is empty (or ``budget_secs`` is spent, when
    the last report says ``backlog``), reading the neighbours once in bulk when that pays off
    (``force``: whenever the user is clustered); otherwise one ordinary pass. Each pass keeps
    the claim while a backlog is left (the caller enqueues the rest)."""
    started = time.perf_counter()
    with c.engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        due = (force and choose_search(conn, user_id, c.settings) == "cells") or \
            bulk_due(conn, c.settings, user_id)
        nb = bulk_neighbours(conn, c.settings, user_id) if due else None
    if nb is None:
        return [consolidate(c, user_id, new_id=new_id, keep_claim_on_backlog=True)]
    reports: list[ConsolidationReport] = []
    while True:
        report = consolidate(c, user_id, new_id=new_id, keep_claim_on_backlog=True,
                             reader=lambda: read_chunk(c.engine, c.settings, nb))
        if not reports:
            report.timings["bulk_read"] = nb.read_ms
        reports.append(report)
        nb.late += [uuid.UUID(ch["result_id"]) for ch in report.changes if ch["new_row"]]
        if not (report.backlog and report.compared
                and report.outcome in ("consolidated", "nothing_to_do")):
            break
        if budget_secs is not None and time.perf_counter() - started > budget_secs:
            break
    return reports
