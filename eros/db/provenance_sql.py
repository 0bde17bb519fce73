"""Provenance (issue 24): reading and carrying ``companion_memories.source_seqs`` /
``source_fallback`` — consolidation's union of its members' sources, recall's and the CLI's
"where does this come from", and erasing what a chat message gave rise to."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from eros.core.provenance import Provenance

SOURCES = text("""
SELECT id, source_seqs, source_fallback FROM engine.companion_memories
 WHERE id = ANY(CAST(:ids AS uuid[]))
""")

# A kept canonical row takes the union of its cluster's sources; rows whose sources do not
# change are not rewritten (a rewrite re-inserts the row into every index, HNSW included).
SET_SOURCES = text("""
UPDATE engine.companion_memories AS m
   SET source_seqs = CAST(c.seqs AS bigint[]), source_fallback = c.fallback
  FROM unnest(CAST(:ids AS uuid[]), CAST(:seqs AS text[]), CAST(:fallbacks AS boolean[]))
       AS c(id, seqs, fallback)
 WHERE m.id = c.id AND (m.source_seqs IS DISTINCT FROM CAST(c.seqs AS bigint[])
                        OR m.source_fallback IS DISTINCT FROM c.fallback)
""")


def array_text(seqs: Sequence[int] | None) -> str | None:
    """A bigint[] as PostgreSQL's text form (``{3,5}``), so rows of different lengths travel
    in one text[] parameter (arrays of arrays must be rectangular)."""
    return None if seqs is None else "{" + ",".join(str(int(s)) for s in seqs) + "}"


def provenance_of(row: Any) -> Provenance | None:
    """A row's ``source_seqs``/``source_fallback`` as a Provenance; None = not recorded."""
    if row.source_seqs is None:
        return None
    return Provenance(tuple(int(s) for s in row.source_seqs), bool(row.source_fallback))


def sources(conn: Connection, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Provenance | None]:
    """The recorded provenance of each of ``ids`` that exists."""
    if not ids:
        return {}
    return {r.id: provenance_of(r) for r in conn.execute(SOURCES, {"ids": list(ids)})}


def set_sources(conn: Connection,
                values: Sequence[tuple[uuid.UUID, Provenance | None]]) -> None:
    """Give existing memories new provenance (a kept canonical row, after a merge)."""
    if values:
        conn.execute(SET_SOURCES, {
            "ids": [i for i, _ in values],
            "seqs": [array_text(p.seqs) if p else None for _, p in values],
            "fallbacks": [p.fallback if p else False for _, p in values]})
