"""The SQL of re-embedding (``eros reembed``) and of recall's per-model split.

Progress lives in the rows themselves: a row is done when its ``embedding_model`` is the
target's, and each batch is written in its own short transaction, so a run killed at any
moment resumes where it stopped and never redoes a committed batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, text

#: namespace of the advisory lock that keeps to one re-embed run at a time.
LOCK_KEY = "eros.reembed"
_NIL = uuid.UUID(int=0)


@dataclass(frozen=True)
class Target:
    """Where a re-embed writes: the live columns, or the columns built beside them for a
    change of dimension (db/dimension_sql.py). Fixed names only, never user input."""

    vector: str
    model: str


LIVE = Target("embedding", "embedding_model")
BESIDE = Target("embedding_next", "embedding_next_model")


@dataclass(frozen=True)
class Pending:
    id: uuid.UUID
    user_id: uuid.UUID
    content: str


def pending_count(conn: Connection, model: str, target: Target = LIVE) -> int:
    """Rows whose vector is not (known to be) from ``model``."""
    return int(conn.execute(text(
        "SELECT count(*) FROM engine.companion_memories"
        f" WHERE {target.model} IS DISTINCT FROM :model"), {"model": model}).scalar_one())


def next_batch(conn: Connection, model: str, *, after: uuid.UUID | None, limit: int,
               target: Target = LIVE) -> list[Pending]:
    """The next ``limit`` rows to do in id order after ``after`` (a keyset walk of the primary
    key: no offset, each batch costs O(limit) however far the walk is)."""
    rows = conn.execute(text(
        "SELECT id, user_id, content FROM engine.companion_memories"
        f" WHERE id > :after AND {target.model} IS DISTINCT FROM :model"
        " ORDER BY id LIMIT :n"), {"after": after or _NIL, "model": model, "n": limit}).all()
    return [Pending(r.id, r.user_id, r.content) for r in rows]


def apply_batch(conn: Connection, rows: Sequence[Pending], vectors: Sequence[Sequence[float]],
                model: str, target: Target = LIVE) -> int:
    """Write the new vectors and model in one statement; a row whose content changed since it
    was read (a correction) keeps its old vector and is picked up again by the next run."""
    if not rows:
        return 0
    result = conn.execute(text(
        "UPDATE engine.companion_memories m"
        f"   SET {target.vector} = CAST(u.v AS vector), {target.model} = :model"
        "  FROM unnest(CAST(:ids AS uuid[]), CAST(:contents AS text[]), CAST(:vecs AS text[]))"
        "       AS u(id, content, v)"
        " WHERE m.id = u.id AND m.content = u.content"
        f"   AND m.{target.model} IS DISTINCT FROM :model"),
        {"ids": [r.id for r in rows], "contents": [r.content for r in rows],
         "vecs": ["[" + ",".join(repr(float(x)) for x in v) + "]" for v in vectors],
         "model": model})
    return int(result.rowcount)


def try_lock(conn: Connection) -> bool:
    """The lock of one re-embed run, held by ``conn``'s open transaction: released when the
    transaction ends (the run commits or rolls it back) or the connection drops (a killed run).

    Transaction-scoped, never a session lock: behind PgBouncer in transaction mode a session
    lock stays on the server connection and passes to whichever client gets it next. The
    transaction only holds the lock (no snapshot is kept between statements at READ
    COMMITTED, so it holds back no vacuum) and is exempt from the idle-in-transaction limit,
    since it idles for the whole run."""
    row = conn.execute(text(
        "SELECT pg_try_advisory_xact_lock(hashtext(:k)) AS locked,"
        " set_config('idle_in_transaction_session_timeout', '0', true)"), {"k": LOCK_KEY}).one()
    return bool(row.locked)


# A loose index scan of ix_companion_memories_user_model: one probe per distinct model of the
# user (NULL, a row written before models were recorded, is probed for separately).
_USER_MODELS = text("""
WITH RECURSIVE models AS (
    (SELECT embedding_model AS model FROM engine.companion_memories
      WHERE user_id = :user_id AND embedding_model IS NOT NULL
      ORDER BY embedding_model LIMIT 1)
    UNION ALL
    SELECT (SELECT embedding_model FROM engine.companion_memories
             WHERE user_id = :user_id AND embedding_model > models.model
             ORDER BY embedding_model LIMIT 1)
      FROM models WHERE models.model IS NOT NULL)
SELECT model FROM models WHERE model IS NOT NULL
UNION ALL
SELECT NULL WHERE EXISTS (SELECT 1 FROM engine.companion_memories
                           WHERE user_id = :user_id AND embedding_model IS NULL)
""")


def user_models(conn: Connection, user_id: uuid.UUID) -> list[str | None]:
    """The embedding models a user's rows carry (None: rows from before 0012)."""
    return [r.model for r in conn.execute(_USER_MODELS, {"user_id": user_id})]


def users_with_cells(conn: Connection, user_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """Which of these users have recall cells (their centroids belong to the old model)."""
    return [r.user_id for r in conn.execute(text(
        "SELECT DISTINCT user_id FROM engine.memory_cells"
        " WHERE user_id = ANY(CAST(:ids AS uuid[]))"), {"ids": list(set(user_ids))})]


def stamp_legacy(conn: Connection, model: str, *, limit: int) -> int:
    """Record ``model`` on up to ``limit`` rows written before models were recorded (NULL),
    without embedding anything: the operator vouches that they came from ``model``."""
    return int(conn.execute(text(
        "UPDATE engine.companion_memories SET embedding_model = :model"
        " WHERE id IN (SELECT id FROM engine.companion_memories"
        "               WHERE embedding_model IS NULL LIMIT :n)"),
        {"model": model, "n": limit}).rowcount)
