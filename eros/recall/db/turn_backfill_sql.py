"""``eros turns backfill``'s statements: the cursor (``engine.turn_backfill``,
0026), the next turns to index, what labels them, and the user locks its write takes.

Which turns: the user's turns, in ``chat_messages.seq`` order up to the cutoff (the newest seq
when the run began: later ones are classify's), of sessions whose classification already read
them (at or below ``classified_through_seq``), never erased (above ``erased_through_seq``,
not in ``erased_seqs``), not archived, and not indexed yet. The write goes through
:func:`eros.recall.db.turn_write_sql.write_fenced`, which re-checks all of that
under the users' locks.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from eros.memory.db.user_lock import LOCK_NAMESPACE

#: the progress row's key
NAME = "turns"

_START = text("""
INSERT INTO engine.turn_backfill (name, cutoff_seq)
VALUES (:name, (SELECT COALESCE(max(seq), 0) FROM engine.chat_messages))
ON CONFLICT (name) DO UPDATE
   SET after_seq = 0, cutoff_seq = EXCLUDED.cutoff_seq, scanned = 0, indexed = 0,
       started_at = now(), updated_at = now(), done_at = NULL
 WHERE :restart
""")

_LOCK = text("SELECT after_seq, cutoff_seq, scanned, indexed, started_at, updated_at, done_at"
             " FROM engine.turn_backfill WHERE name = :name FOR UPDATE")

_READ = text("SELECT after_seq, cutoff_seq, scanned, indexed, started_at, updated_at, done_at"
             " FROM engine.turn_backfill WHERE name = :name")

_ADVANCE = text("""
UPDATE engine.turn_backfill
   SET after_seq = :after, scanned = scanned + :scanned, indexed = indexed + :indexed,
       updated_at = now(), done_at = CASE WHEN :done THEN now() ELSE NULL END
 WHERE name = :name
""")

# chat_messages' unique index on seq walks the range in order; each turn's session by primary
# key, and "not indexed yet" by memory_turns' primary key.
_BATCH = text("""
SELECT m.seq, m.session_id, s.user_id, s.instance_id, m.sent_at, m.content, m.channel
  FROM engine.chat_messages m
  JOIN engine.chat_sessions s ON s.id = m.session_id
 WHERE m.seq > :after AND m.seq <= :cutoff
   AND m.role = 'user' AND m.channel = ANY(CAST(:channels AS text[]))
   AND m.seq <= s.classified_through_seq AND m.seq > s.erased_through_seq
   AND (s.erased_seqs IS NULL OR m.seq <> ALL(s.erased_seqs))
   AND s.archived_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM engine.memory_turns t WHERE t.seq = m.seq)
 ORDER BY m.seq
 LIMIT :n
""")

# The labels of the memories citing these turns: by provenance (source_seqs, GIN-indexed), or,
# for a memory written before provenance, every turn of its metadata window in its session
# (as ERASE_TURNS reads a memory's sources).
_CITED = text("""
SELECT q.seq, mem.sensitivity
  FROM engine.companion_memories mem
 CROSS JOIN LATERAL unnest(mem.source_seqs) AS q(seq)
 WHERE mem.source_seqs && CAST(:seqs AS bigint[]) AND mem.sensitivity IS NOT NULL
   AND q.seq = ANY(CAST(:seqs AS bigint[]))
UNION ALL
SELECT c.seq, mem.sensitivity
  FROM engine.companion_memories mem
  JOIN engine.chat_messages c ON c.session_id = mem.session_id
 WHERE mem.session_id = ANY(CAST(:sessions AS uuid[])) AND mem.source_seqs IS NULL
   AND mem.sensitivity IS NOT NULL AND c.seq = ANY(CAST(:seqs AS bigint[]))
   AND CASE WHEN jsonb_typeof(mem.metadata -> 'source_seq') = 'array'
            THEN c.seq BETWEEN (mem.metadata -> 'source_seq' ->> 0)::bigint
                           AND (mem.metadata -> 'source_seq' ->> -1)::bigint
            ELSE true END
""")

_WITHHELD = text("SELECT user_id, label FROM engine.sensitivity_withheld"
                 " WHERE user_id = ANY(CAST(:users AS uuid[]))")

# Every forget takes the user's consolidation lock first (forget_sql.lock_user): holding it
# for each user of the batch, in one order, makes the write see every forget that committed
# before and makes every later one wait for it.
_LOCK_USERS = text("""
SELECT count(pg_advisory_xact_lock(hashtextextended(:ns || ':' || u, 0)))
  FROM (SELECT u FROM unnest(CAST(:users AS text[])) AS u ORDER BY u) AS o
""")


@dataclass(frozen=True)
class Progress:
    after_seq: int
    cutoff_seq: int
    scanned: int
    indexed: int
    started_at: datetime
    updated_at: datetime
    done_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return {"after_seq": self.after_seq, "cutoff_seq": self.cutoff_seq,
                "total_scanned": self.scanned, "total_indexed": self.indexed,
                "started_at": self.started_at.isoformat(),
                "updated_at": self.updated_at.isoformat(),
                "done_at": self.done_at.isoformat() if self.done_at else None}


def _progress(row: Any) -> Progress:
    return Progress(int(row.after_seq), int(row.cutoff_seq), int(row.scanned),
                    int(row.indexed), row.started_at, row.updated_at, row.done_at)


def start(conn: Connection, *, restart: bool = False) -> None:
    """Create the cursor (cutoff: the newest seq now), or reset it with ``restart``."""
    conn.execute(_START, {"name": NAME, "restart": restart})


def newest_seq(conn: Connection) -> int:
    """The newest ``chat_messages.seq`` (what a new cursor's cutoff is)."""
    return int(conn.execute(text("SELECT COALESCE(max(seq), 0) FROM engine.chat_messages"))
               .scalar_one())


def lock(conn: Connection) -> Progress:
    """The cursor, locked until the transaction ends (one batch is written at a time)."""
    return _progress(conn.execute(_LOCK, {"name": NAME}).one())


def progress(conn: Connection) -> Progress | None:
    row = conn.execute(_READ, {"name": NAME}).first()
    return _progress(row) if row is not None else None


def advance(conn: Connection, *, after: int, scanned: int, indexed: int, done: bool) -> None:
    conn.execute(_ADVANCE, {"name": NAME, "after": after, "scanned": scanned,
                            "indexed": indexed, "done": done})


def next_turns(conn: Connection, *, after: int, cutoff: int, channels: Collection[str],
               n: int) -> list[Any]:
    """The next ``n`` turns to index past ``after`` (seq order)."""
    return list(conn.execute(_BATCH, {"after": after, "cutoff": cutoff,
                                      "channels": sorted(channels), "n": n}).all())


def cited_labels(conn: Connection, seqs: Sequence[int],
                 sessions: Sequence[uuid.UUID]) -> dict[int, set[str]]:
    """Each seq's labels from the memories citing it."""
    out: dict[int, set[str]] = {}
    for row in conn.execute(_CITED, {"seqs": list(seqs), "sessions": list(sessions)}):
        out.setdefault(int(row.seq), set()).add(str(row.sensitivity))
    return out


def withheld(conn: Connection, users: Collection[uuid.UUID]) -> dict[uuid.UUID, set[str]]:
    """The labels each of ``users`` withheld."""
    out: dict[uuid.UUID, set[str]] = {}
    for row in conn.execute(_WITHHELD, {"users": list(users)}):
        out.setdefault(row.user_id, set()).add(str(row.label))
    return out


def lock_users(conn: Connection, users: Collection[uuid.UUID]) -> None:
    """Take each user's erasure lock (the consolidation key every forget takes first) until
    the transaction ends, in one order (no deadlock between two writers)."""
    conn.execute(_LOCK_USERS, {"ns": LOCK_NAMESPACE, "users": sorted(str(u) for u in users)})
