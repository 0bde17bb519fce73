"""The erasure log and the tombstones: one ``engine.erasure_log`` row per erasure
request — ids, counts and codes only, never text.

A ``done`` row is written inside the erasure's own transaction (:func:`begin` first, so the
tombstones can point at it, :func:`complete` last): the record commits with the deletes or
not at all. A ``failed`` row is written after the erasure rolled back (:func:`record`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from eros.core.erasure import Scope, Status

INSERT = text("""
INSERT INTO engine.erasure_log (scope, user_id, instance_id, memory_id, session_id,
                                requested_at, completed_at, status, counts, task_id, error_code)
VALUES (:scope, CAST(:user_id AS uuid), CAST(:instance_id AS uuid), CAST(:memory_id AS uuid),
        CAST(:session_id AS uuid), COALESCE(CAST(:requested_at AS timestamptz), now()),
        clock_timestamp(), :status, CAST(:counts AS jsonb), :task_id, :error_code)
RETURNING id
""")

COMPLETE = text("""
UPDATE engine.erasure_log
   SET counts = CAST(:counts AS jsonb), completed_at = clock_timestamp(),
       user_id = COALESCE(user_id, CAST(:user_id AS uuid))
 WHERE id = :id
""")

LIST = text("""
SELECT id, scope, user_id, instance_id, memory_id, session_id, requested_at, completed_at,
       status, counts, task_id, error_code
  FROM engine.erasure_log
 WHERE (CAST(:user_id AS uuid) IS NULL OR user_id = CAST(:user_id AS uuid))
   AND (NOT :failed OR status = 'failed')
 ORDER BY requested_at DESC, id DESC
 LIMIT :n
""")


def _s(value: uuid.UUID | None) -> str | None:
    return str(value) if value is not None else None


def record(conn: Connection, *, scope: Scope, status: Status, user_id: uuid.UUID | None = None,
           instance_id: uuid.UUID | None = None, memory_id: uuid.UUID | None = None,
           counts: Mapping[str, int] | None = None, task_id: str | None = None,
           error_code: str | None = None, requested_at: datetime | None = None,
           session_id: uuid.UUID | None = None) -> int:
    """Insert one erasure_log row (completed now); its id."""
    return int(conn.execute(INSERT, {
        "scope": scope, "user_id": _s(user_id), "instance_id": _s(instance_id),
        "memory_id": _s(memory_id), "session_id": _s(session_id),
        "requested_at": requested_at, "status": status,
        "counts": json.dumps(dict(counts or {}), sort_keys=True), "task_id": task_id,
        "error_code": error_code}).scalar_one())


def begin(conn: Connection, *, scope: Scope, user_id: uuid.UUID | None = None,
          instance_id: uuid.UUID | None = None, memory_id: uuid.UUID | None = None,
          task_id: str | None = None, requested_at: datetime | None = None,
          session_id: uuid.UUID | None = None) -> int:
    """The ``done`` row of the erasure this transaction runs (counts filled by complete)."""
    return record(conn, scope=scope, status="done", user_id=user_id, instance_id=instance_id,
                  memory_id=memory_id, task_id=task_id, requested_at=requested_at,
                  session_id=session_id)


def complete(conn: Connection, erasure_id: int, counts: Mapping[str, int], *,
             user_id: uuid.UUID | None = None) -> None:
    """Fill in what the erasure removed (and the user, when only the memory was known)."""
    conn.execute(COMPLETE, {"id": erasure_id, "user_id": _s(user_id),
                            "counts": json.dumps(dict(counts), sort_keys=True)})


def list_erasures(conn: Connection, user_id: uuid.UUID | None = None, *,
                  failed_only: bool = False, limit: int = 100) -> list[dict[str, Any]]:
    """Newest first; one user's, or everyone's."""
    rows = conn.execute(LIST, {"user_id": _s(user_id), "failed": failed_only, "n": limit})
    return [dict(r._mapping) for r in rows]


def user_of(conn: Connection, erasure_id: int) -> uuid.UUID | None:
    """The user an erasure concerned (a memory, message or session forget learns it as it
    runs), or None."""
    found = conn.execute(text("SELECT user_id FROM engine.erasure_log WHERE id = :id"),
                         {"id": erasure_id}).scalar_one_or_none()
    return found if isinstance(found, uuid.UUID) else (uuid.UUID(str(found)) if found else None)
