"""The memory guard's statements on the turns recall layer: the turns indexed
``unscreened`` while the meaning layer had no model, read for ``eros.screen_unscreened`` and
settled — ``current``, ``quarantined``, or removed when the rules now reject it (a turn the
rules reject is never indexed). Counts and seqs only, never text."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text


@dataclass(frozen=True)
class StoredTurn:
    seq: int
    #: the message's text and channel, as the product stored them
    content: str
    channel: str
    embedding_model: str
    embedding: list[float]


# ix_memory_turns_unscreened (0026) serves the read: empty in normal operation
_UNSCREENED = text("""
SELECT t.seq, m.content, m.channel, t.embedding_model, CAST(t.embedding AS real[]) AS embedding
  FROM engine.memory_turns t JOIN engine.chat_messages m ON m.seq = t.seq
 WHERE t.status = 'unscreened' AND t.seq > :after
 ORDER BY t.seq LIMIT :n
""")


def unscreened_turns(engine: Engine, *, batch: int = 500) -> Iterator[list[StoredTurn]]:
    """Every ``unscreened`` turn, in seq order, a batch at a time (a short read each)."""
    after = 0
    while True:
        with engine.connect() as conn:
            rows = conn.execute(_UNSCREENED, {"after": after, "n": batch}).all()
        if not rows:
            return
        yield [StoredTurn(int(r.seq), r.content, r.channel, r.embedding_model,
                          [float(x) for x in r.embedding]) for r in rows]
        after = int(rows[-1].seq)


_SETTLE = text("""
WITH decided AS (
    SELECT * FROM unnest(CAST(:seqs AS bigint[]), CAST(:statuses AS text[])) AS d(seq, status)
), changed AS (
    UPDATE engine.memory_turns t SET status = d.status
      FROM decided d
     WHERE t.seq = d.seq AND t.status = 'unscreened' AND d.status <> 'removed'
    RETURNING t.status
), removed AS (
    DELETE FROM engine.memory_turns t USING decided d
     WHERE t.seq = d.seq AND t.status = 'unscreened' AND d.status = 'removed'
    RETURNING 'removed' AS status
)
SELECT status, count(*) AS n FROM (SELECT status FROM changed
                                   UNION ALL SELECT status FROM removed) AS x
 GROUP BY status
""")


def settle_unscreened(conn: Connection, decisions: Sequence[tuple[int, str]]) -> dict[str, int]:
    """Apply ``(seq, status)`` decisions — ``current``, ``quarantined`` or ``removed`` — to
    turns still ``unscreened`` (one forgotten or settled meanwhile is left alone); the rows
    changed by status."""
    if not decisions:
        return {}
    rows = conn.execute(_SETTLE, {"seqs": [s for s, _ in decisions],
                                  "statuses": [d for _, d in decisions]})
    return {str(r.status): int(r.n) for r in rows}


def count_unscreened(conn: Connection) -> int:
    return int(conn.execute(text(
        "SELECT count(*) FROM engine.memory_turns WHERE status = 'unscreened'")).scalar_one())
