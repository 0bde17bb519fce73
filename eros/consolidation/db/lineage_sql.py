"""Lineage of memories (``eros memories USER --history``): what each memory replaced (from
``memory_history``) and what replaced it (its row) — read-only, kept apart from a pass's
statements (:mod:`eros.consolidation.db.consolidation_sql`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

REPLACED_BY = text("""
SELECT m.id, m.status, m.replaced_by, m.replaced_at, r.content AS replacement
  FROM engine.companion_memories m
  LEFT JOIN engine.companion_memories r ON r.id = m.replaced_by
 WHERE m.id = ANY(CAST(:ids AS uuid[]))
""")

REPLACED = text("""
SELECT h.result_id, h.action, h.model, h.created_at, src.id AS source_id, s.content, s.status
  FROM engine.memory_history h
 CROSS JOIN LATERAL unnest(h.source_ids) AS src(id)
  LEFT JOIN engine.companion_memories s ON s.id = src.id
 WHERE h.user_id = :user_id AND h.result_id = ANY(CAST(:ids AS uuid[]))
 ORDER BY h.created_at, h.id
""")


@dataclass
class Lineage:
    """What one memory replaced (from memory_history) and what replaced it (its row)."""

    replaced: list[dict[str, Any]]
    replaced_by: dict[str, Any] | None


def lineage(conn: Connection, user_id: uuid.UUID,
            ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Lineage]:
    out = {i: Lineage([], None) for i in ids}
    if not ids:
        return out
    for r in conn.execute(REPLACED_BY, {"ids": list(ids)}):
        if r.replaced_by is not None:
            out[r.id].replaced_by = {"id": r.replaced_by, "status": r.status,
                                     "at": r.replaced_at, "content": r.replacement}
    for r in conn.execute(REPLACED, {"user_id": user_id, "ids": list(ids)}):
        out[r.result_id].replaced.append({"id": r.source_id, "action": r.action,
                                          "content": r.content, "model": r.model,
                                          "at": r.created_at})
    return out
