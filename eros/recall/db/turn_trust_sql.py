"""Trust on the turns recall layer: the statements that label indexed turns
after the fact and re-judge them with the guard. Seqs, labels and counts; a turn's text is
read from ``chat_messages`` only to be labelled or judged, never written anywhere.

- **Labels**: a turn's label is the most sensitive (SENSITIVITY_ORDER) of its own and the labels
  of the user's memories citing it (``source_seqs``, whatever their status, a fallback window
  included: a label says what the turn is about). These statements only raise a label; the
  erasure deletes a withdrawn label's turns instead of unlabelling them.
- **Rescreen**: ``eros rescreen`` re-judges ``current`` and ``quarantined`` turns; what the
  meaning layer now rejects is quarantined, what the rules now reject leaves the index.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from eros.core.sensitivity import SENSITIVITY_ORDER
from eros.memory.core.channels import VOICE, strip_voice_tags
from eros.recall.db.turns_sql import T, _deleted

# --- labels after the fact ------------------------------------------------------------------
_ORDER = "CAST(:order AS text[])"

#: the turns ``:ids`` (memories) cite take the memories' labels, when more sensitive.
_INHERIT = text(f"""
WITH c AS (
    SELECT m.user_id, q.seq, min(array_position({_ORDER}, m.sensitivity)) AS rank
      FROM engine.companion_memories m CROSS JOIN LATERAL unnest(m.source_seqs) AS q(seq)
     WHERE m.id = ANY(CAST(:ids AS uuid[])) AND m.sensitivity IS NOT NULL
     GROUP BY m.user_id, q.seq)
UPDATE {T} t SET sensitivity = ({_ORDER})[c.rank]
  FROM c
 WHERE t.seq = c.seq AND t.user_id = c.user_id
   AND (t.sensitivity IS NULL OR array_position({_ORDER}, t.sensitivity) > c.rank)
RETURNING t.seq, t.user_id, t.sensitivity
""")

#: ``:seqs`` relabelled: each takes the most sensitive of its own label, the labeller's
#: (``:labels``, NULL = none) and every citing memory's (one fenced GIN probe a seq, as
#: fusion_sql reads them at recall).
_RELABEL = text(f"""
WITH g AS (
    SELECT * FROM unnest(CAST(:seqs AS bigint[]), CAST(:labels AS text[])) AS g(seq, label)),
cand AS (
    SELECT g.seq, g.label FROM g WHERE g.label IS NOT NULL
    UNION ALL
    SELECT g.seq, m.sensitivity
      FROM g JOIN {T} t ON t.seq = g.seq
     CROSS JOIN LATERAL (SELECT c.user_id, c.sensitivity FROM engine.companion_memories c
                          WHERE c.source_seqs @> ARRAY[g.seq] AND c.sensitivity IS NOT NULL
                         OFFSET 0) AS m
     WHERE m.user_id = t.user_id),
best AS (SELECT seq, min(array_position({_ORDER}, label)) AS rank FROM cand GROUP BY seq)
UPDATE {T} t SET sensitivity = ({_ORDER})[b.rank]
  FROM best b
 WHERE t.seq = b.seq AND b.rank IS NOT NULL
   AND (t.sensitivity IS NULL OR array_position({_ORDER}, t.sensitivity) > b.rank)
RETURNING t.seq, t.user_id, t.sensitivity
""")


@dataclass(frozen=True)
class Relabelled:
    """A turn whose label changed: its user and its label now."""

    seq: int
    user_id: uuid.UUID
    sensitivity: str


def _relabelled(rows: Any) -> list[Relabelled]:
    return [Relabelled(int(r.seq), r.user_id, r.sensitivity) for r in rows]


def inherit_labels(conn: Connection, memory_ids: Sequence[uuid.UUID]) -> list[Relabelled]:
    """The turns these memories cite take their labels (when more sensitive than their own):
    call in the transaction that labelled the memories (relabel, a merge's result, retention's
    fold of sources). The turns whose label changed."""
    if not memory_ids:
        return []
    return _relabelled(conn.execute(_INHERIT, {"ids": list(memory_ids),
                                               "order": list(SENSITIVITY_ORDER)}))


def relabel_turns(conn: Connection, labels: Sequence[tuple[int, str | None]]
                  ) -> list[Relabelled]:
    """``(seq, the labeller's label or None)``: each turn takes the most sensitive of its own
    label, the labeller's and its citing memories'. The turns whose label changed."""
    if not labels:
        return []
    return _relabelled(conn.execute(_RELABEL, {
        "seqs": [s for s, _ in labels], "labels": [lab for _, lab in labels],
        "order": list(SENSITIVITY_ORDER)}))


@dataclass(frozen=True)
class ScannedTurn:
    """A turn a relabel scan reads: its user, text (voice tags stripped) and label now."""

    seq: int
    user_id: uuid.UUID
    content: str
    sensitivity: str | None


_SCAN = text(f"""
SELECT t.seq, t.user_id, m.content, m.channel, t.sensitivity
  FROM {T} t JOIN engine.chat_messages m ON m.seq = t.seq
 WHERE t.seq > :after AND t.indexed_at < :cutoff
 ORDER BY t.seq
 LIMIT :n
""")


def scan_turns(conn: Connection, *, after: int, cutoff: datetime, n: int) -> list[ScannedTurn]:
    """The next ``n`` indexed turns after seq ``after`` indexed before ``cutoff`` (every
    status: a quarantined turn can be restored, so its label must be right too)."""
    return [ScannedTurn(int(r.seq), r.user_id, strip_voice_tags(r.content)
                        if r.channel == VOICE else r.content, r.sensitivity)
            for r in conn.execute(_SCAN, {"after": after, "cutoff": cutoff, "n": n})]


# --- rescreen (``eros rescreen``) -----------------------------------------------------------
@dataclass(frozen=True)
class StoredTurn:
    """An indexed turn as the guard re-judges it: its message's text and its vector."""

    seq: int
    status: str
    content: str
    channel: str
    embedding_model: str
    embedding: list[float]


_SCREENABLE = text(f"""
SELECT t.seq, t.status, m.content, m.channel, t.embedding_model,
       CAST(t.embedding AS real[]) AS embedding
  FROM {T} t JOIN engine.chat_messages m ON m.seq = t.seq
 WHERE t.status IN ('current', 'quarantined') AND t.seq > :after
 ORDER BY t.seq LIMIT :n
""")


def screenable_turns(engine: Any, *, batch: int = 500) -> Iterator[list[StoredTurn]]:
    """Every ``current`` or ``quarantined`` turn, in seq order, a batch at a time (a short
    read each; ``unscreened`` ones are ``eros.screen_unscreened``'s)."""
    after = 0
    while True:
        with engine.connect() as conn:
            rows = conn.execute(_SCREENABLE, {"after": after, "n": batch}).all()
        if not rows:
            return
        yield [StoredTurn(int(r.seq), r.status, r.content, r.channel, r.embedding_model,
                          [float(x) for x in r.embedding]) for r in rows]
        after = int(rows[-1].seq)


def quarantine_turns(conn: Connection, seqs: Sequence[int]) -> int:
    """``current`` turns to ``quarantined`` (never recalled); how many moved."""
    if not seqs:
        return 0
    return int(conn.execute(text(
        f"UPDATE {T} SET status = 'quarantined' WHERE seq = ANY(CAST(:s AS bigint[]))"
        " AND status = 'current'"), {"s": list(seqs)}).rowcount)


def remove_turns(conn: Connection, seqs: Sequence[int]) -> int:
    """Turns the rules now reject leave the index (they would not be indexed today)."""
    return _deleted(conn, "seq = ANY(CAST(:s AS bigint[])) AND status IN ('current',"
                    " 'quarantined')", {"s": list(seqs)}) if seqs else 0


def restore_turn(conn: Connection, seq: int) -> bool:
    """A quarantined turn made recallable again; False when it is not quarantined."""
    return bool(conn.execute(text(
        f"UPDATE {T} SET status = 'current' WHERE seq = :s AND status = 'quarantined'"),
        {"s": seq}).rowcount)
