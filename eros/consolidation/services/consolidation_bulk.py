"""The first consolidation pass over a large backlog as a bulk operation.

A clustered user's per-memory search (:func:`eros.recall.db.cells_sql.cell_pairs`) reads, for every
memory, the sketches of its CONSOLIDATION_CELL_PROBES nearest cells: ~8·√n rows a memory
through index probes, ~2.3 ms a memory at 50k. Here the same predicate — same user, layer,
category and embedding model, current, in one of the memory's probed cells or in no cell,
within the sketch's Hamming bound and within cosine distance 1 − θ — is evaluated for ALL the
user's current memories at once: the vectors are read once (binary COPY), the probed cells and
the similarities come from matrix products (:mod:`eros.consolidation.core.consolidation_search`),
and what
floating point leaves within rounding of a boundary is decided by pgvector's own ``<=>`` in
SQL, so the pairs are the per-memory search's, pair for pair.

The passes then run as today, chunk after chunk (same pages, same clusters, same model calls,
same bounded write transactions under the per-user lock and claim, through
:func:`eros.consolidation.services.consolidate.consolidate`): only the read of each chunk's pairs
comes from
the bulk result instead of the per-memory probes, so the decisions are today's
(``tests/integration/test_consolidation_bulk.py`` compares them on the bench corpus). Pairs are
directed (a memory's search may find a twin whose own search does not find it), kept only
while the far end is still current; the canonical rows a pass writes are compared once, before
the next chunk, with the memories whose search would find them; a memory the bulk read did not
see (written since) is searched per memory, as today; a re-clustering of the user during the
run makes the next chunk read everything again. A crash loses nothing: every chunk commits on
its own and the backlog is the cursor; a new run reads again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine

from eros.consolidation.core.consolidation import Memory, Pair, components
from eros.consolidation.core.consolidation_search import (
    Probers,
    Rows,
    lengths,
    near_pairs,
    nearest_cells,
    probe_band,
)
from eros.consolidation.db import consolidation_bulk_sql as bulk_sql
from eros.consolidation.db import consolidation_sql as sql
from eros.consolidation.services.consolidate import Consolidator, consolidate
from eros.consolidation.services.consolidation_read import (
    PAGE,
    Read,
    choose_search,
    read_pages,
    search_pairs,
)
from eros.consolidation.services.consolidation_report import ConsolidationReport
from eros.recall.db import cells_sql
from eros.recall.services import recall_cells
from eros.settings import Settings


@dataclass
class Neighbours:
    """What the bulk read found: each searched memory's near rows (directed, as its own
    search finds them), and what a later chunk needs to add the rows written since."""

    user_id: uuid.UUID
    ids: list[uuid.UUID]
    index: dict[uuid.UUID, int]
    rows: Rows
    probers: Probers
    near: dict[uuid.UUID, list[uuid.UUID]]
    #: the user's cells when read (a re-clustering since makes the result stale) and each
    #: cell's position among the centroids (the probes' numbering)
    cells: tuple[Any, ...]
    cell_pos: dict[int, int]
    codes: dict[Any, int] = field(default_factory=dict)
    #: rows written since (canonical rows), to add before the next chunk's search
    written: list[uuid.UUID] = field(default_factory=list)
    #: backlog rows dated from here on may have been written by others since the read
    since: Any = None
    #: rows added since the read (written by a pass or by others)
    added: set[uuid.UUID] = field(default_factory=set)
    #: milliseconds of the bulk read, and of its snapshot (the one transaction it holds)
    read_ms: float = 0.0
    snapshot_ms: float = 0.0


def _code(codes: dict[Any, int], key: Any) -> int:
    return codes.setdefault(key, len(codes))


def _rows(vectors: np.ndarray, meta: Sequence[Any], cell_pos: dict[int, int],
          codes: dict[Any, int]) -> Rows:
    """Rows for the search; cells as positions in the centroid matrix (NO_CELL stays −1)."""
    return Rows.of(vectors,
                   np.array([cell_pos.get(r.cell, -1) for r in meta], dtype=np.int64),
                   np.array([_code(codes, ("scope", r.instance_id, r.category)) for r in meta],
                            dtype=np.int64),
                   np.array([_code(codes, ("model", r.embedding_model)) for r in meta],
                            dtype=np.int64))


def _checked(conn: Connection, ids_a: Sequence[uuid.UUID], ids_b: Sequence[uuid.UUID],
             found: Any, max_distance: float) -> list[Pair]:
    """The pairs found: sure ones as they are, those within rounding of θ by pgvector."""
    sure = [(ids_a[a], ids_b[b]) for a, b in zip(found.a[found.sure], found.b[found.sure],
                                                   strict=True)]
    doubt_a = [ids_a[a] for a in found.a[~found.sure]]
    doubt_b = [ids_b[b] for b in found.b[~found.sure]]
    return sure + bulk_sql.check_pairs(conn, doubt_a, doubt_b, max_distance=max_distance)


#: runs one step of SQL: on a connection the caller holds, or in a short transaction of its own
Sql = Callable[[Callable[[Connection], Any]], Any]


def _on(conn: Connection) -> Sql:
    return lambda step: step(conn)


def _short(engine: Engine) -> Sql:
    def run(step: Callable[[Connection], Any]) -> Any:
        with engine.begin() as conn:
            return step(conn)
    return run


@dataclass
class _Snapshot:
    """What the bulk read takes from one snapshot; the products run after it is closed."""

    user_id: uuid.UUID
    ids: list[uuid.UUID]
    rows: Rows
    centroids: np.ndarray
    cell_pos: dict[int, int]
    codes: dict[Any, int]
    cells: tuple[Any, ...]
    since: Any
    started: float
    snapshot_ms: float


def read_user(conn: Connection, s: Settings, user_id: uuid.UUID) -> _Snapshot:
    """The user's current vectors (binary COPY), what the search needs of each row, and the
    centroids, in the caller's snapshot: the only part of the bulk read that holds one."""
    started = time.perf_counter()
    vectors = bulk_sql.current_vectors(conn, user_id, s.embedding_dim)
    meta = {r.id: r for r in bulk_sql.current_meta(conn, user_id)}
    keep = [n for n, i in enumerate(vectors.ids) if i in meta]
    ids = [vectors.ids[n] for n in keep]
    cells, centroids = bulk_sql.centroids(conn, user_id)
    cell_pos = {c: n for n, c in enumerate(cells)}
    codes: dict[Any, int] = {}
    rows = _rows(vectors.vectors if len(keep) == len(vectors.ids) else vectors.vectors[keep],
                 [meta[i] for i in ids], cell_pos, codes)
    del vectors, meta  # the worker keeps the unit vectors only (~2.7 KB a memory)
    return _Snapshot(user_id, ids, rows, centroids, cell_pos, codes,
                     bulk_sql.cells_version(conn, user_id), bulk_sql.read_at(conn), started,
                     round((time.perf_counter() - started) * 1000, 1))


def search(sql_step: Sql, s: Settings, snap: _Snapshot) -> Neighbours:
    """Every memory's near rows from the snapshot: the probed cells and similarities by
    matrix products with no transaction open, what rounding leaves uncertain decided by
    pgvector in ``sql_step`` (:mod:`eros.consolidation.core.consolidation_search`)."""
    ids, rows, cell_pos = snap.ids, snap.rows, snap.cell_pos
    k = s.consolidation_cell_probes
    probes, uncertain = nearest_cells(rows, snap.centroids, k)
    if len(uncertain):  # ties within rounding: ranked by pgvector, as today's search does
        # only the tie's cells are measured again (a zero row is ranked whole, as before)
        zero = lengths(rows.head[uncertain]) < 0.5
        band = probe_band(rows, snap.centroids, uncertain[~zero], k)
        cells = sorted(cell_pos, key=cell_pos.__getitem__)
        ranked = sql_step(lambda conn: {
            **bulk_sql.probes_by_band(conn, ids, band, cells, k),
            **bulk_sql.probes_of(conn, [ids[n] for n in uncertain[zero]], k)})
        width = max(probes.shape[1], s.consolidation_cell_probes)
        probes = np.pad(probes, ((0, 0), (0, width - probes.shape[1])), constant_values=-2)
        for n in uncertain:
            got = [cell_pos[c] for c in ranked.get(ids[n], []) if c in cell_pos]
            probes[n] = got + [-2] * (width - len(got))
    probers = Probers.of(probes)
    found = near_pairs(rows, probers, rows, similarity=s.consolidation_similarity,
                       max_hamming=sql.max_hamming(s.consolidation_similarity,
                                                   s.embedding_dim), same=True)
    near: dict[uuid.UUID, list[uuid.UUID]] = {}
    for a, b in sql_step(lambda conn: _checked(conn, ids, ids, found,
                                               1.0 - s.consolidation_similarity)):
        near.setdefault(a, []).append(b)
    return Neighbours(snap.user_id, ids, {i: n for n, i in enumerate(ids)}, rows, probers, near,
                      snap.cells, cell_pos, snap.codes, since=snap.since,
                      read_ms=round((time.perf_counter() - snap.started) * 1000, 1),
                      snapshot_ms=snap.snapshot_ms)


def bulk_neighbours(conn: Connection, s: Settings, user_id: uuid.UUID) -> Neighbours:
    """Every current memory's near rows by the clustered user's cells search, at once, on
    the caller's connection (a run reads in its own snapshot and searches after it closes:
    :func:`first_pass`)."""
    return search(_on(conn), s, read_user(conn, s, user_id))


def add_written(conn: Connection, s: Settings, nb: Neighbours, ids: Sequence[uuid.UUID]
                ) -> None:
    """Rows written since the bulk read (a pass's canonical rows): the searched memories
    whose search would find them get them as near rows, checked once, when they are written."""
    meta = {r.id: r for r in bulk_sql.meta_by_id(conn, ids)}
    vectors = bulk_sql.vectors_by_id(conn, [i for i in ids if i in meta], s.embedding_dim)
    if not vectors.ids:
        return
    late = _rows(vectors.vectors, [meta[i] for i in vectors.ids], nb.cell_pos, nb.codes)
    found = near_pairs(nb.rows, nb.probers, late, similarity=s.consolidation_similarity,
                       max_hamming=sql.max_hamming(s.consolidation_similarity,
                                                   s.embedding_dim), same=False)
    for a, b in _checked(conn, nb.ids, vectors.ids, found, 1.0 - s.consolidation_similarity):
        nb.near.setdefault(a, []).append(b)


def _catch_up(conn: Connection, s: Settings, nb: Neighbours, state: bulk_sql.ChunkState
              ) -> None:
    """Bring the bulk result up to this chunk's snapshot: read again when the user was
    re-clustered meanwhile (every probe may have moved), else add the rows written since."""
    if state.cells != nb.cells:
        fresh = bulk_neighbours(conn, s, nb.user_id)
        fresh.read_ms = nb.read_ms
        nb.__dict__.update(fresh.__dict__)
        return
    # this run's canonical rows, and memories others wrote meanwhile (new rows join the
    # backlog, dated now): the searched memories meet them as their own search would
    new = [i for i in dict.fromkeys([*nb.written, *state.recent])
           if i not in nb.index and i not in nb.added]
    if new:
        add_written(conn, s, nb, new)
        nb.added.update(new)
    nb.written = []


def _cells_chunk(conn: Connection, s: Settings, nb: Neighbours, listed: list[uuid.UUID]
                 ) -> tuple[list[uuid.UUID], set[Pair], list[Memory]]:
    """The chunk, its pairs and its rows as :func:`read_new`'s page loop finds them, in one
    statement (and a per-memory search for a page holding rows the bulk read did not see):
    ``listed`` is the backlog's next CONSOLIDATION_CHUNK_SIZE rows (read with the chunk's
    state, in the same snapshot); the rows of those and of every near row their pages could
    reach are read at once, and which of them are current — what the page loop steps over
    and a pair's far end is checked by — is which rows came back (each row probed once, not
    once for the backlog and once for its row). A full list holding a row no longer current
    (rare: a pass takes its members out of the backlog) is read again by the page loop."""
    size = s.consolidation_chunk_size
    near = nb.near
    looked = {*listed, *(j for i in listed for j in near.get(i, ()))}
    rows = sql.rows_by_id(conn, list(looked))
    current = {m.id for m in rows}
    backlog = [i for i in listed if i in current]
    if len(listed) >= size and len(backlog) < size:  # stepped over: the page loop fills it
        backlog = [i for i, _ in sql.uncompared_page(conn, nb.user_id, size, None)]
    pages = [backlog[k:k + PAGE] for k in range(0, len(backlog), PAGE)]
    found: list[list[Pair]] = []
    for page in pages:
        unknown = [i for i in page if i not in nb.index]
        found.append([(i, j) for i in page if i in nb.index for j in near.get(i, ())]
                     + (search_pairs(conn, nb.user_id, unknown, s, search="cells")
                        if unknown else []))
    more = {i for ps in found for p in ps for i in p} - looked
    more.update(i for i in backlog if i not in looked)
    if more:  # far ends of a per-memory search, rows of a refilled page: in the same order
        rows = sorted([*rows, *sql.rows_by_id(conn, list(more))],
                      key=lambda m: (m.created_at, m.id))
        current = {m.id for m in rows}
    chunk: list[uuid.UUID] = []
    pairs: set[Pair] = set()
    for page, found_near in zip(pages, found, strict=True):
        chunk.extend(page)
        pairs.update(sql.unique_pairs([p for p in found_near
                                       if p[0] in current and p[1] in current]))
        if len(page) < PAGE or components(pairs) >= s.consolidation_max_clusters:
            break
    affected = {*chunk, *(i for p in pairs for i in p)}
    return chunk, pairs, [m for m in rows if m.id in affected]


def read_chunk(engine: Engine, s: Settings, nb: Neighbours) -> Read:
    """:func:`eros.consolidation.services.consolidation_read.read_new` with the bulk result as the
    search: the same pages, the same stop, the same REPEATABLE READ snapshot for rows and
    claim — in two statements for a clustered user (what it needs before the rows, the
    backlog's next chunk included, in one,
    :data:`~eros.consolidation.db.consolidation_bulk_sql.CHUNK_STATE`; the rows in one,
    :func:`_cells_chunk`) and the check of the rows written since the last chunk."""
    user_id = nb.user_id
    with engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        state = bulk_sql.chunk_state(conn, user_id, cap=s.consolidation_exact_below + 1,
                                     timeout_ms=s.consolidation_statement_timeout_ms,
                                     since=nb.since, size=s.consolidation_chunk_size)
        if state.current > s.consolidation_exact_below and state.has_cells:
            _catch_up(conn, s, nb, state)
            chunk, pairs, memories = _cells_chunk(conn, s, nb, state.backlog)
            # a UUID orders as its text does (both by its 128 bits): sorted without str()
            return Read(memories, sorted(pairs, key=sql.pair_order), chunk, state.claim,
                        "cells")
        search = choose_search(conn, user_id, s)  # no longer clustered: today's read
        rows, near, backlog = read_pages(conn, s, user_id, search)
    return Read(rows, near, backlog, state.claim, search)


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


def _cluster_first(engine: Engine, s: Settings, user_id: uuid.UUID) -> None:
    """A backlog of more than a chunk for a user beat would cut into recall cells
    (RECALL_CELL_MIN_ROWS) but has not yet: cut it now, so the pass searches in cells, in
    bulk — without cells a large user was searched through the HNSW index, which nothing
    else reads with the defaults (the index is built only where a plan reads it).
    A user with cells, a small backlog or too few memories is left as it is."""
    with engine.connect() as conn:
        if bulk_sql.backlog_count(conn, user_id, cap=s.consolidation_chunk_size + 1) \
                <= s.consolidation_chunk_size or cells_sql.has_cells(conn, user_id) or \
                cells_sql.vector_count(conn, user_id) < s.recall_cell_min_rows:
            return
    recall_cells.cluster_user(engine, s, user_id)


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
    _cluster_first(c.engine, c.settings, user_id)
    with c.engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        due = (force and choose_search(conn, user_id, c.settings) == "cells") or \
            bulk_due(conn, c.settings, user_id)
        snap = read_user(conn, c.settings, user_id) if due else None
    if snap is None:
        return [consolidate(c, user_id, new_id=new_id, keep_claim_on_backlog=True)]
    # the snapshot is closed: the products run with no transaction open (seconds for a large
    # user), pgvector's checks each in a short one
    nb = search(_short(c.engine), c.settings, snap)
    reports: list[ConsolidationReport] = []
    while True:
        report = consolidate(c, user_id, new_id=new_id, keep_claim_on_backlog=True,
                             reader=lambda: read_chunk(c.engine, c.settings, nb))
        if not reports:
            report.timings["bulk_read"] = nb.read_ms
            report.timings["bulk_snapshot"] = nb.snapshot_ms
        reports.append(report)
        nb.written += [uuid.UUID(ch["result_id"]) for ch in report.changes if ch["new_row"]]
        if not (report.backlog and report.compared
                and report.outcome in ("consolidated", "nothing_to_do")):
            break
        if budget_secs is not None and time.perf_counter() - started > budget_secs:
            break
    return reports
