"""The read of a consolidation pass (issue 17): the memories not yet compared, oldest first,
in pages, and their near pairs with every same-scope memory of the user — through the binary
sketches for a large user, exactly for a small one — never the user's all pairs."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine

from eros.core.consolidation import Memory, Pair, components
from eros.db import consolidation_sql as sql
from eros.db.timeouts import set_statement_timeout
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
    #: how the neighbours were searched: "exact" or "quantised".
    search: str


def read_new(engine: Engine, s: Settings, user_id: uuid.UUID) -> Read:
    """The chunk of not-yet-compared memories, their near pairs and the claim, in one short
    REPEATABLE READ transaction (memories and pairs agree with each other)."""
    with engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        if s.consolidation_statement_timeout_ms:
            set_statement_timeout(conn, s.consolidation_statement_timeout_ms)
        cap = s.consolidation_exact_below + 1
        quantised = sql.current_count(conn, user_id, cap=cap) >= cap
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
            pairs.update(search_pairs(conn, user_id, ids, s, quantised=quantised))
            if len(page) < want or components(pairs) >= s.consolidation_max_clusters:
                break
        affected = {*chunk, *(i for p in pairs for i in p)}
        memories = sql.rows_by_id(conn, sorted(affected, key=str))
        claim = sql.claimed_at(conn, user_id)
    return Read(memories, sorted(pairs, key=lambda p: (str(p[0]), str(p[1]))), chunk, claim,
                "quantised" if quantised else "exact")


def search_pairs(conn: Connection, user_id: uuid.UUID, ids: list[uuid.UUID], s: Settings, *,
                 quantised: bool) -> list[Pair]:
    """The near pairs of ``ids`` with every same-scope memory of the user: through the
    sketches for a large user, exactly for a small one."""
    if quantised:
        return sql.quantised_pairs(conn, ids, similarity=s.consolidation_similarity)
    return sql.exact_pairs(conn, user_id, ids, similarity=s.consolidation_similarity)
