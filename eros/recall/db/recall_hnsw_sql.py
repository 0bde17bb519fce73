"""Recall's HNSW plan over the memories (RECALL_QUANTIZED_SCAN off, or consolidation above
CONSOLIDATION_HNSW_ABOVE): pgvector's iterative scan of ``ix_companion_memories_embedding_hnsw``,
which holds current rows only (0028), with the history rows of ``include_replaced`` read exactly
beside it. The scope filter and the shared column lists are :mod:`eros.recall.db.recall_sql`'s."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import Connection, text

from eros.recall.core.ranking import Candidate
from eros.recall.db.recall_sql import (
    _TABLE,
    ScopeFilter,
    _columns,
    _scoped,
    search_statement,
    to_candidates,
)


@dataclass(frozen=True)
class HnswParams:
    """Per-transaction pgvector settings of the HNSW plan."""

    ef_search: int = 100
    max_scan_tuples: int = 20000


def configure_hnsw(conn: Connection, params: HnswParams, *, at_least: int = 0) -> None:
    """``SET LOCAL`` the iterative scan for this transaction (one round trip).

    ``ef_search`` is raised to ``at_least`` (the LIMIT): below it the first pass of the scan
    returns fewer candidates than asked for and the rest come from slower iterations. The
    ``'[1]'::vector`` literal makes sure pgvector's library is loaded (its GUCs defined) before
    the values are set, so they are validated rather than stored as unchecked placeholders.
    """
    conn.execute(text(
        "SELECT CAST('[1]' AS vector),"
        " set_config('hnsw.iterative_scan', 'relaxed_order', true),"
        " set_config('hnsw.ef_search', CAST(:ef AS text), true),"
        " set_config('hnsw.max_scan_tuples', CAST(:mst AS text), true),"
        " set_config('enable_sort', 'off', true)"),
        {"ef": min(1000, max(params.ef_search, at_least)), "mst": params.max_scan_tuples})


#: what a history row is beside the graph's current ones (``include_replaced``, 0028).
_HISTORY = " AND m.status <> 'current'"


def _current(flt: ScopeFilter) -> ScopeFilter:
    """The scope's current rows: what the HNSW index holds (partial on ``status = 'current'``,
    0028) — its predicate is implied by the WHERE, so the planner can walk the graph."""
    return replace(flt, include_replaced=False)


def _names(sources: bool) -> str:
    """The output columns of a search, by name (those of :func:`_columns` and the distance)."""
    names = "id, content, category, importance, created_at, layer, sensitivity"
    return names + (", source_seqs, source_fallback" if sources else "") + ", distance"


def hnsw_pool_sql(flt: ScopeFilter) -> str:
    """The statement of :func:`hnsw_pool` (exposed so tests can EXPLAIN it).

    The graph holds current rows only (0028). With ``include_replaced`` the scope's history
    rows (merged, superseded) are read exactly beside it, and only when the graph's scan came
    back with its ``n`` rows: a scan that gave up still comes back short, so the caller scans
    the whole scope exactly as before."""
    near = (f"WITH near AS MATERIALIZED (SELECT {_columns(flt.sources)},"
            " m.embedding <=> :q AS distance"
            f" FROM {_TABLE} m WHERE {_current(flt).where()} ORDER BY m.embedding <=> :q"
            " LIMIT :n)")
    if not flt.include_replaced:
        return near + " SELECT * FROM near ORDER BY distance, id"
    return (near + f", old AS MATERIALIZED ({_scoped(flt, _HISTORY)})"
            f" SELECT * FROM (SELECT {_names(flt.sources)} FROM near UNION ALL"
            f" SELECT {_names(flt.sources)} FROM (SELECT * FROM old ORDER BY distance, id"
            " LIMIT :n) h WHERE (SELECT count(*) FROM near) >= :n) x"
            " ORDER BY distance, id LIMIT :n")


def hnsw_pool(conn: Connection, flt: ScopeFilter, query: Sequence[float], n: int,
              params: HnswParams) -> list[Candidate]:
    """About the ``n`` nearest rows in scope, through HNSW with an iterative scan; may return
    fewer than ``n`` when the scan hits ``max_scan_tuples`` (the caller then scans exactly)."""
    configure_hnsw(conn, params, at_least=n)
    rows = conn.execute(search_statement(hnsw_pool_sql(flt), len(query)),
                        {**flt.params(), "q": list(query), "n": n})
    return to_candidates(rows.all())


def hnsw_grouped_sql(flt: ScopeFilter) -> str:
    """The statement of :func:`hnsw_grouped` (exposed so tests can EXPLAIN it). With
    ``include_replaced``, a category's history rows are read exactly beside the graph's
    current ones (see :func:`hnsw_pool_sql`), only for a category the graph gave ``k``."""
    near = ("SELECT x.* FROM unnest(:categories) AS cat(c) CROSS JOIN LATERAL"
            f" (SELECT {_columns(flt.sources)}, m.embedding <=> :q AS distance FROM {_TABLE} m"
            f" WHERE {_current(flt).where()} AND m.category = cat.c"
            " ORDER BY m.embedding <=> :q LIMIT :k) x")
    if not flt.include_replaced:
        return near
    names = _names(flt.sources)
    return (f"WITH near AS MATERIALIZED ({near}),"
            " whole AS (SELECT category FROM near GROUP BY category HAVING count(*) >= :k),"
            " old AS MATERIALIZED (SELECT * FROM (SELECT s.*, row_number() OVER (PARTITION BY"
            " s.category ORDER BY s.distance, s.id) AS rn FROM"
            f" ({_scoped(flt, _HISTORY + ' AND m.category = ANY(:categories)')}) s) r"
            " WHERE r.rn <= :k)"
            f" SELECT {names} FROM (SELECT u.*, row_number() OVER (PARTITION BY u.category"
            " ORDER BY u.distance, u.id) AS rn FROM"
            f" (SELECT {names} FROM near UNION ALL SELECT {names} FROM old"
            " WHERE category IN (SELECT category FROM whole)) u) z WHERE z.rn <= :k")


def hnsw_grouped(conn: Connection, flt: ScopeFilter, query: Sequence[float],
                 categories: Sequence[str], k: int, params: HnswParams) -> list[Candidate]:
    """About the ``k`` nearest rows of each category: one HNSW iterative scan per category
    (a LATERAL join, one statement). A category may come back short (see :func:`hnsw_pool`)."""
    if not categories:
        return []
    configure_hnsw(conn, params, at_least=k)
    rows = conn.execute(search_statement(hnsw_grouped_sql(flt), len(query), categories=True),
                        {**flt.params(), "q": list(query), "categories": list(categories),
                         "k": k})
    return to_candidates(rows.all())
