"""The task dead letter ``engine.rejected_tasks``: messages refused for their
arguments, recorded with the task, the message id and the error — never an argument's value."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

INSERT = text("""
INSERT INTO engine.rejected_tasks (task_name, task_id, error)
VALUES (:task_name, :task_id, :error)
""")

RECENT = text("""
SELECT task_name, task_id, error, rejected_at
  FROM engine.rejected_tasks
 ORDER BY rejected_at DESC, id DESC
 LIMIT :limit
""")

COUNT = text("SELECT count(*) FROM engine.rejected_tasks")


def record(conn: Connection, task_name: str, task_id: str | None, error: str) -> None:
    conn.execute(INSERT, {"task_name": task_name, "task_id": task_id, "error": error[:2000]})


def recent(conn: Connection, limit: int = 5) -> list[dict[str, Any]]:
    """The newest refusals (for ``eros status``)."""
    return [{"task": r.task_name, "task_id": r.task_id, "error": r.error,
             "rejected_at": r.rejected_at.isoformat()}
            for r in conn.execute(RECENT, {"limit": limit})]


def count(conn: Connection) -> int:
    return int(conn.execute(COUNT).scalar_one())
