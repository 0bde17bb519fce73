"""The read of a consolidation pass: the memories not yet compared, oldest first,
in pages, and their near pairs with the same-scope memories of the user — exactly for a small
user, through the binary sketches for a large one, through HNSW for a very large one — never
the user's all pairs."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine

from eros.consolidation.core.consolidation import Memory, Pair, components
from eros.consolidation.db import consolidation_sql as sql
from eros.consolidation.db import consolidation_state_sql as state_sql
from eros.db.timeouts import set_statement_timeout
from eros.recall.db import cells_sql
from eros.recall.db.recall_hnsw_sql import HnswParams, configure_hnsw
from eros.settings import Settings

#: uncompared memories searched per statement; the read stops early once the clusters found
#: fill a model call (CONSOLIDATION_MAX_CLUSTERS), so a deferred cluster is rarely searched twice.
PAGE = 256


@dataclass
class Read:
    """What the read transaction saw: the memories the pass looks at, their near pairs, the
    chunk compared, and the claim it started under."""

    memories: list[Memory]
    pairs: list[Pair]
    chunk: list[uuid.UUID]
    claim: datetime | None
    #: how the neighbours were searched: "exact", "cells", "quantised" or "hnsw".
    search: str


def read_new(engine: Engine, s: Settings, user_id: uuid.UUID) -> Read:
    """The chunk of not-yet-compared memories, their near pairs and the claim, in one short
    REPEATABLE READ transaction (memories and pairs agree with each other)."""
    with engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        if s.consolidation_statement_timeout_ms:
            set_statement_timeout(conn, s.consolidation_statement_timeout_ms)
        search = choose_search(conn, user_id, s)
        memories, pairs, chunk = read_pages(conn, s, user_id, search)
        claim = state_sql.claimed_at(conn, user_id)
    return Read(memories, pairs, chunk, claim, search)


def read_pages(conn: Connection, s: Settings, user_id: uuid.UUID, search: str
               ) -> tuple[list[Memory], list[Pair], list[uuid.UUID]]:
    """The next chunk of not-yet-compared memories, page by page until it is full or holds
    CONSOLIDATION_MAX_CLUSTERS clusters, with its near pairs (sorted) and every memory they
    touch, read with ``search``."""
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
        pairs.update(search_pairs(conn, user_id, ids, s, search=search))
        if len(page) < want or components(pairs) >= s.consolidation_max_clusters:
            break
    affected = {*chunk, *(i for p in pairs for i in p)}
    memories = sql.rows_by_id(conn, sorted(affected, key=str))
    return memories, sorted(pairs, key=lambda p: (str(p[0]), str(p[1]))), chunk


def choose_search(conn: Connection, user_id: uuid.UUID, s: Settings) -> str:
    """exact up to CONSOLIDATION_EXACT_BELOW current memories; above, a user cut into recall
    cells through each memory's CONSOLIDATION_CELL_PROBES nearest cells; otherwise HNSW above
    CONSOLIDATION_HNSW_ABOVE (its iterative scan is set for the transaction here) and the
    sketches in between; a capped count, never the exact size of a huge user — capped at
    CONSOLIDATION_EXACT_BELOW first (a clustered user needs no more: a first pass of a 50k user
    counted 20,001 rows every chunk, ten times what the choice needs), counted further only to
    compare with CONSOLIDATION_HNSW_ABOVE when the user has no cells."""
    below, hnsw_above = s.consolidation_exact_below, s.consolidation_hnsw_above or 0
    n = sql.current_count(conn, user_id, cap=below + 1)
    if n > below and cells_sql.has_cells(conn, user_id):
        return "cells"
    if hnsw_above > below and n > below:
        n = sql.current_count(conn, user_id, cap=hnsw_above + 1)
    if hnsw_above and n > hnsw_above:
        k = s.consolidation_neighbours
        configure_hnsw(conn, HnswParams(ef_search=max(64, 2 * k)), at_least=k)
        return "hnsw"
    return "quantised" if n > below else "exact"


def search_pairs(conn: Connection, user_id: uuid.UUID, ids: list[uuid.UUID], s: Settings, *,
                 search: str) -> list[Pair]:
    """The near pairs of ``ids`` with the same-scope memories of the user, by ``search``."""
    if search == "hnsw":
        return sql.knn_pairs(conn, ids, similarity=s.consolidation_similarity,
                             k=s.consolidation_neighbours)
    if search == "cells":
        return sql.unique_pairs(cells_sql.cell_pairs(
            conn, ids, max_distance=1.0 - s.consolidation_similarity,
            max_hamming=sql.max_hamming(s.consolidation_similarity, s.embedding_dim),
            probes=s.consolidation_cell_probes))
    if search == "quantised":
        return sql.quantised_pairs(conn, ids, similarity=s.consolidation_similarity)
    return sql.exact_pairs(conn, user_id, ids, similarity=s.consolidation_similarity)
