"""The SQL of recall: find the memories nearest a query vector within one user's scope.

Why several plans. The original dreaming-lite recall's IVFFlat, probed with a per-user filter,
could return fewer than K rows: an approximate index finds the nearest rows of the *whole table*
and the filter is applied afterwards. Here every search is one of:

- **exact** — a ``MATERIALIZED`` CTE that first selects the scope's rows (through
  ``ix_companion_memories_recall_bq``) and only then orders by distance. The CTE is an optimisation
  fence: the ordering cannot be pushed into the HNSW index, so the answer is exact by
  construction. Cost is linear in the scope's rows (~3 µs a row with inline vectors).
- **quantized** — the default for large scopes: an index-only scan of the scope's binary
  sketches (``embedding_bq``, migrations 0006/0007) ordered by Hamming distance keeps a few hundred
  ids, which are re-ranked by exact cosine. Linear in the scope's rows (~0.2 µs a row) and
  independent of other users, unlike a filtered HNSW scan that walks past their rows.
- **hnsw** — the HNSW index with pgvector 0.8's *iterative* index scan
  (``hnsw.iterative_scan = relaxed_order``): the scan keeps walking the graph until the LIMIT
  is met after filtering, or ``hnsw.max_scan_tuples`` is reached. ``enable_sort = off`` makes
  the planner take the index rather than a bitmap scan plus sort (that choice is exact but
  linear); relaxed order is repaired by re-sorting the materialised result.

The caller (``eros.recall``) picks the plan from capped counts (:func:`scope_count`,
:func:`category_counts`) and re-runs a search exactly when the HNSW scan came back short, so
"fewer than K rows" only ever means "fewer than K rows exist". Every function takes a
``Connection`` inside the caller's transaction: ``SET LOCAL`` settings die with it and never
leak into the pool (an exact scan later in the same transaction is unaffected by them: its
plan has no index order to use).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import Connection, TextClause, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import Text

from eros.core.names import DEFAULT_SCOPE, SCOPES, Scope
from eros.recall.core.ranking import Candidate, Layer

_TABLE = "engine.companion_memories"
CELLS_TABLE = "engine.memory_cells"


#: each scope's layer condition over the alias ``{a}``
_LAYER_SQL: dict[Scope, str] = {
    "profile": "{a}.instance_id IS NULL", "relationship": "{a}.instance_id = :instance_id",
    "both": "({a}.instance_id IS NULL OR {a}.instance_id = :instance_id)"}


@dataclass(frozen=True)
class ScopeFilter:
    """Whose memories, which layer(s), and whether replaced ones count.

    ``both`` without an instance is the profile layer alone: a relationship memory belongs to
    one persona, and reading every persona's would leak one persona's history into another.
    """

    user_id: uuid.UUID
    scope: Scope = DEFAULT_SCOPE
    instance_id: uuid.UUID | None = None
    include_replaced: bool = False
    #: only rows of this embedding model (recall across models while ``eros reembed`` runs);
    #: rows from before the model was recorded (NULL) count as ``legacy_model``'s.
    embedding_model: str | None = None
    legacy_model: str | None = None
    #: False: memories with a special-category label (``sensitivity``) are left out.
    include_sensitive: bool = True
    #: also read each row's provenance (``source_seqs``, ``source_fallback``).
    sources: bool = False

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"unknown scope {self.scope!r}; expected one of {SCOPES}")
        if self.scope == "relationship" and self.instance_id is None:
            raise ValueError("scope 'relationship' needs an instance id")

    @property
    def effective_scope(self) -> Scope:
        return "profile" if self.scope == "both" and self.instance_id is None else self.scope

    def where(self, alias: str = "m") -> str:
        """The WHERE clause over ``alias`` (fixed text; values are bound parameters)."""
        return self._where(alias, self.effective_scope)

    def layer_wheres(self, alias: str = "m") -> list[str]:
        """One WHERE clause per layer in scope: each is one range of an index keyed by user
        then instance, where ``both``'s ``IS NULL OR = :i`` can only be a filter."""
        scope = self.effective_scope
        layers: list[Scope] = ["profile", "relationship"] if scope == "both" else [scope]
        return [self._where(alias, layer) for layer in layers]

    def _where(self, alias: str, scope: Scope) -> str:
        parts = [f"{alias}.user_id = :user_id", _LAYER_SQL[scope].format(a=alias)]
        if not self.include_replaced:
            parts.append(f"{alias}.status = 'current'")
        else:  # history (merged, superseded) but never what the guard quarantined (0017)
            parts.append(f"{alias}.status <> 'quarantined'")
        if self.embedding_model is not None:
            parts.append(f"COALESCE({alias}.embedding_model, :legacy_model) = :embedding_model")
        if not self.include_sensitive:
            parts.append(f"{alias}.sensitivity IS NULL")
        return " AND ".join(parts)

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"user_id": self.user_id, "instance_id": self.instance_id}
        if self.embedding_model is not None:
            params.update(embedding_model=self.embedding_model, legacy_model=self.legacy_model)
        return params


_COLUMNS = ("m.id, m.content, m.category, m.importance, m.created_at,"
            " CASE WHEN m.instance_id IS NULL THEN 'profile' ELSE 'relationship' END AS layer,"
            " m.sensitivity")
#: provenance: two more columns of the heap row the search reads anyway.
_PROVENANCE = ", m.source_seqs, m.source_fallback"


def _columns(sources: bool) -> str:
    return _COLUMNS + _PROVENANCE if sources else _COLUMNS
_CATEGORIES = bindparam("categories", type_=ARRAY(Text))


def query_param(dim: int) -> Any:
    """The ``:q`` bind of every search statement (a pgvector ``vector(dim)``)."""
    return bindparam("q", type_=Vector(dim))


def search_statement(sql: str, dim: int, *, categories: bool = False) -> TextClause:
    binds = [query_param(dim)] + ([_CATEGORIES] if categories else [])
    return text(sql).bindparams(*binds)


def to_candidates(rows: Sequence[Any]) -> list[Candidate]:
    if rows and "source_seqs" in rows[0]._fields:
        return [Candidate(id=str(r.id), content=r.content, category=r.category,
                          importance=r.importance, created_at=r.created_at,
                          layer=_layer(r.layer), distance=float(r.distance),
                          sources=None if r.source_seqs is None else tuple(r.source_seqs),
                          source_fallback=bool(r.source_fallback),
                          sensitivity=r.sensitivity) for r in rows]
    return [Candidate(id=str(r.id), content=r.content, category=r.category,
                      importance=r.importance, created_at=r.created_at,
                      layer=_layer(r.layer), distance=float(r.distance),
                      sensitivity=r.sensitivity) for r in rows]


def _layer(value: str) -> Layer:
    return "profile" if value == "profile" else "relationship"


@dataclass(frozen=True)
class Counts:
    """Rows in scope (each count capped at ``cap``) and the table's row estimate."""

    rows: int
    table_rows: float
    cap: int
    #: per category, when counted per category (each capped at ``cap``).
    per_category: dict[str, int] = field(default_factory=dict)
    #: the user's recall cells (0 = never clustered; see eros.recall.db.cells_sql).
    cells: int = 0


def _cap_sql(need_param: str) -> str:
    """``cap = max(exact_below, ⌈need · table_rows / max_scan_tuples⌉, need + 1)``.

    A count only has to tell "small enough to scan exactly" from "large enough for HNSW", so
    it stops at the larger of the two thresholds: at most ``cap`` index entries however many
    memories a heavy user has. The second term is the share of the table below which an
    iterative HNSW scan is expected to run out of ``max_scan_tuples`` before it has ``need``
    rows (it walks the whole table's nearest rows, keeping the scope's); the third tells "at
    most ``need``" from "more". ``table_rows`` is ``pg_class.reltuples`` (0 if never analysed).
    """
    return ("WITH t AS (SELECT greatest(reltuples, 0) AS r FROM pg_class"
            f" WHERE oid = CAST('{_TABLE}' AS regclass)),"
            f" c AS (SELECT CAST(greatest(:below, ceil({need_param} * r / :mst),"
            f" {need_param} + 1) AS bigint) AS cap FROM t)")


def _mst(max_scan_tuples: int | None) -> int:
    """No limit: a divisor so large that the share term of the cap is 1."""
    return 2**62 if max_scan_tuples is None else max(max_scan_tuples, 1)


def _capped_count(flt: ScopeFilter, extra: str = "") -> tuple[str, str]:
    """Rows in scope, at most ``cap``, as (LATERAL joins, the count's expression).

    Layer after layer, each range read only as far as the cap leaves: ``both`` as one OR
    filter would read past another persona's entries before reaching its own, and counting
    each layer to the full cap would read up to twice the cap."""
    joins, counted = "", "0"
    for i, where in enumerate(flt.layer_wheres()):
        joins += (f" CROSS JOIN LATERAL (SELECT {counted} + count(*) AS n FROM (SELECT 1"
                  f" FROM {_TABLE} m WHERE {where}{extra}"
                  f" LIMIT (SELECT cap FROM c) - {counted}) s) l{i}")
        counted = f"l{i}.n"
    return joins, counted


def _scoped(flt: ScopeFilter, extra: str = "") -> str:
    """Every row in scope with its distance to ``:q``, one index range per layer."""
    return " UNION ALL ".join(
        f"SELECT {_columns(flt.sources)}, m.embedding <=> :q AS distance FROM {_TABLE} m"
        f" WHERE {where}{extra}"
        for where in flt.layer_wheres())


def scope_count(conn: Connection, flt: ScopeFilter, *, exact_below: int, need: int,
                max_scan_tuples: int | None) -> Counts:
    """The scope's rows, capped (see :func:`_cap_sql`), and the user's cells, in one statement.

    ``max_scan_tuples=None`` drops the cap's share term: only the HNSW plan has that limit."""
    joins, n = _capped_count(flt)
    sql = (_cap_sql(":need") + " SELECT (SELECT r FROM t) AS table_rows,"
           f" (SELECT cap FROM c) AS cap, {n} AS n, (SELECT count(*) FROM {CELLS_TABLE}"
           f" WHERE user_id = :user_id) AS cells FROM (SELECT 1) one{joins}")
    row = conn.execute(text(sql), {**flt.params(), "below": max(exact_below, 0),
                                   "need": max(need, 1), "mst": _mst(max_scan_tuples)}).one()
    return Counts(int(row.n), float(row.table_rows), int(row.cap), cells=int(row.cells))


def category_counts(conn: Connection, flt: ScopeFilter, categories: Sequence[str], *,
                    exact_below: int, need: int, max_scan_tuples: int | None) -> Counts:
    """Rows per category in scope, each capped (see :func:`_cap_sql`), in one statement."""
    joins, n = _capped_count(flt, " AND m.category = cat.c")
    sql = (_cap_sql(":need") + " SELECT cat.c AS category, (SELECT r FROM t) AS table_rows,"
           f" (SELECT cap FROM c) AS cap, {n} AS n FROM unnest(:categories) AS cat(c){joins}")
    rows = conn.execute(text(sql).bindparams(_CATEGORIES), {
        **flt.params(), "categories": list(categories), "below": max(exact_below, 0),
        "need": max(need, 1), "mst": _mst(max_scan_tuples)}).all()
    if not rows:
        return Counts(0, 0.0, exact_below)
    per = {r.category: int(r.n) for r in rows}
    return Counts(sum(per.values()), float(rows[0].table_rows), int(rows[0].cap), per)


def exact_pool(conn: Connection, flt: ScopeFilter, query: Sequence[float], n: int
               ) -> list[Candidate]:
    """The ``n`` nearest rows in scope, by a full scan of the scope (exact)."""
    sql = (f"WITH scoped AS MATERIALIZED ({_scoped(flt)})"
           " SELECT * FROM scoped ORDER BY distance, id LIMIT :n")
    rows = conn.execute(search_statement(sql, len(query)),
                        {**flt.params(), "q": list(query), "n": n})
    return to_candidates(rows.all())


def exact_grouped(conn: Connection, flt: ScopeFilter, query: Sequence[float],
                  categories: Sequence[str], k: int) -> list[Candidate]:
    """The ``k`` nearest rows of each given category, by a full scan of those categories."""
    if not categories:
        return []
    sql = (f"WITH scoped AS MATERIALIZED ({_scoped(flt, ' AND m.category = ANY(:categories)')})"
           " SELECT * FROM (SELECT s.*, row_number() OVER (PARTITION BY s.category"
           " ORDER BY s.distance, s.id) AS rn FROM scoped s) r WHERE r.rn <= :k")
    rows = conn.execute(search_statement(sql, len(query), categories=True),
                        {**flt.params(), "q": list(query), "categories": list(categories),
                         "k": k})
    return to_candidates(rows.all())


# --- the quantised plan (migrations 0006, 0007) -----------------------------------------------
#: the query's sketch, computed once per statement: a scalar subquery becomes an InitPlan, so a
#: generic plan (psycopg prepares a statement run 5 times) does not re-quantise it per row.
QUERY_SKETCH = "(SELECT binary_quantize(CAST(:q AS vector)))"


def _sketch_top(flt: ScopeFilter, limit: str, extra: str = "") -> str:
    """Ids of the ``limit`` rows in scope nearest by Hamming distance between sketches: an
    index-only scan of ``ix_companion_memories_recall_bq`` (id and sketch are INCLUDEd) per
    layer, each one index range (``both``: the profile's and the persona's, UNION ALL, so no
    other persona's sketch is read). Ties at the cut go by index order: an id tiebreak costs
    ~10 % and only decides among candidates equally far by sketch, which the exact re-rank
    then orders anyway."""
    branches = [f"SELECT m.id, m.embedding_bq <~> {QUERY_SKETCH} AS h FROM {_TABLE} m"
                f" WHERE {where}{extra} ORDER BY h LIMIT {limit}" for where in flt.layer_wheres()]
    if len(branches) == 1:
        return branches[0]
    union = " UNION ALL ".join(f"({b})" for b in branches)
    return f"SELECT u.id, u.h FROM ({union}) u ORDER BY u.h LIMIT {limit}"


def configure_quantized(conn: Connection) -> None:
    """``SET LOCAL`` the planner for the quantised scan (one round trip).

    - ``enable_bitmapscan = off``: a bitmap scan of a layer's range would fetch every heap row
      in it; the index-only scan reads the sketches from the index tuples.
    - ``max_parallel_workers_per_gather = 0``: a heavy user's scan costs ~10 ms, about what
      starting workers costs on a busy machine; parallel plans measured slower and noisier.
    """
    conn.execute(text("SELECT set_config('enable_bitmapscan', 'off', true),"
                      " set_config('max_parallel_workers_per_gather', '0', true)"))


def rerank_sql(candidates: str, limit: str, *, sources: bool = False) -> str:
    """The ``limit`` candidates nearest by exact cosine. ``id = ANY(ARRAY(…))`` is one index
    scan over the sorted ids: a join fetched them one nested-loop step at a time (500
    candidates: ~3 ms more of a heavy user's ~20)."""
    return (f"SELECT {_columns(sources)}, m.embedding <=> :q AS distance FROM {_TABLE} m"
            f" WHERE m.id = ANY(ARRAY({candidates})) ORDER BY distance, m.id LIMIT {limit}")


def quantized_pool_sql(flt: ScopeFilter) -> str:
    """The statement of :func:`quantized_pool` (exposed so tests can EXPLAIN it)."""
    return rerank_sql(f"SELECT c.id FROM ({_sketch_top(flt, ':m')}) c", ":n",
                      sources=flt.sources)


def quantized_pool(conn: Connection, flt: ScopeFilter, query: Sequence[float], n: int,
                   candidates: int) -> list[Candidate]:
    """About the ``n`` nearest rows in scope: the ``candidates`` nearest by sketch, re-ranked by
    exact cosine."""
    configure_quantized(conn)
    rows = conn.execute(search_statement(quantized_pool_sql(flt), len(query)),
                        {**flt.params(), "q": list(query), "n": n, "m": max(candidates, n)})
    return to_candidates(rows.all())


def quantized_grouped_sql(flt: ScopeFilter) -> str:
    """The statement of :func:`quantized_grouped` (exposed so tests can EXPLAIN it)."""
    top = _sketch_top(flt, ":m", " AND m.category = cat.c")
    return ("SELECT x.* FROM unnest(:categories) AS cat(c) CROSS JOIN LATERAL"
            f" ({rerank_sql(f'SELECT c.id FROM ({top}) c', ':k', sources=flt.sources)}) x")


def quantized_grouped(conn: Connection, flt: ScopeFilter, query: Sequence[float],
                      categories: Sequence[str], k: int, candidates: int) -> list[Candidate]:
    """About the ``k`` nearest rows of each category: each category's ``candidates`` nearest
    by sketch (one index range per layer: the index is keyed by user, layer, category),
    re-ranked."""
    if not categories:
        return []
    configure_quantized(conn)
    rows = conn.execute(search_statement(quantized_grouped_sql(flt), len(query), categories=True),
                        {**flt.params(), "q": list(query), "categories": list(categories),
                         "k": k, "m": max(candidates, k)})
    return to_candidates(rows.all())
