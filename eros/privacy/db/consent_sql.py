"""Consent that lasts: the special-category labels a user withdrew consent for
(``engine.sensitivity_withheld``) and the resumable relabelling of rows written without a
label (``engine.relabel_progress``). Ids, labels and counts only, never text."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

WITHHOLD = text("""
INSERT INTO engine.sensitivity_withheld (user_id, label, erasure_id)
SELECT :user_id, unnest(CAST(:labels AS text[])), :erasure_id
ON CONFLICT (user_id, label) DO NOTHING
RETURNING label
""")

ALLOW = text("""
DELETE FROM engine.sensitivity_withheld
 WHERE user_id = :user_id AND label = ANY(CAST(:labels AS text[]))
RETURNING label
""")

WITHHELD = text("SELECT label, withheld_at, erasure_id FROM engine.sensitivity_withheld"
                " WHERE user_id = :user_id ORDER BY label")
LABELS = text("SELECT label FROM engine.sensitivity_withheld WHERE user_id = :user_id")
DELETE_USER = text("DELETE FROM engine.sensitivity_withheld WHERE user_id = :user_id"
                   " RETURNING label")


def withhold(conn: Connection, user_id: uuid.UUID, labels: Sequence[str], *,
             erasure_id: int | None = None) -> int:
    """Record that ``labels`` are not to be stored again for the user; how many are new."""
    return len(conn.execute(WITHHOLD, {"user_id": user_id, "labels": list(labels),
                                       "erasure_id": erasure_id}).all())


def allow(conn: Connection, user_id: uuid.UUID, labels: Sequence[str]) -> list[str]:
    """Lift the user's withdrawal for ``labels``; the labels that were withheld."""
    return sorted(r.label for r in conn.execute(ALLOW, {"user_id": user_id,
                                                        "labels": list(labels)}))


def withheld_labels(conn: Connection, user_id: uuid.UUID) -> frozenset[str]:
    """The labels the user withdrew consent for (what the extraction drops)."""
    return frozenset(r.label for r in conn.execute(LABELS, {"user_id": user_id}))


def withheld(conn: Connection, user_id: uuid.UUID) -> list[dict[str, Any]]:
    """The user's withdrawals, with when and by which erasure."""
    return [dict(r._mapping) for r in conn.execute(WITHHELD, {"user_id": user_id})]


# --- relabelling (rows written before 0018 carry no label) -----------------------------------
START = text("""
INSERT INTO engine.relabel_progress (labeller, cutoff) VALUES (:labeller, now())
ON CONFLICT (labeller) DO UPDATE
   SET after_id = CASE WHEN :restart THEN NULL ELSE relabel_progress.after_id END,
       after_seq = CASE WHEN :restart THEN NULL ELSE relabel_progress.after_seq END,
       cutoff = CASE WHEN :restart THEN now() ELSE relabel_progress.cutoff END,
       scanned = CASE WHEN :restart THEN 0 ELSE relabel_progress.scanned END,
       labelled = CASE WHEN :restart THEN 0 ELSE relabel_progress.labelled END,
       done_at = CASE WHEN :restart THEN NULL ELSE relabel_progress.done_at END
RETURNING after_id, after_seq, cutoff, done_at
""")

# The progress row locked first: two runs of one labeller take turns batch by batch.
LOCK = text("SELECT after_id, after_seq, cutoff, done_at FROM engine.relabel_progress"
            " WHERE labeller = :labeller FOR UPDATE")

BATCH = text("""
SELECT id, content FROM engine.companion_memories
 WHERE sensitivity IS NULL AND created_at < :cutoff
   AND (CAST(:after AS uuid) IS NULL OR id > CAST(:after AS uuid))
 ORDER BY id
 LIMIT :n
""")

SET_LABELS = text("""
UPDATE engine.companion_memories AS m SET sensitivity = c.label
  FROM unnest(CAST(:ids AS uuid[]), CAST(:labels AS text[])) AS c(id, label)
 WHERE m.id = c.id AND m.sensitivity IS NULL
RETURNING m.id
""")

ADVANCE = text("""
UPDATE engine.relabel_progress
   SET after_id = COALESCE(CAST(:after AS uuid), after_id), scanned = scanned + :scanned,
       labelled = labelled + :labelled, updated_at = now(),
       done_at = CASE WHEN :done THEN now() ELSE NULL END
 WHERE labeller = :labeller
RETURNING scanned, labelled, done_at
""")

# Rows this batch labelled with a label their user has withheld: they are erased as
# ``forget --sensitive`` would have erased them, had they carried the label then.
WITHHELD_HITS = text("""
SELECT DISTINCT m.user_id, m.sensitivity AS label
  FROM engine.companion_memories m
  JOIN engine.sensitivity_withheld w ON w.user_id = m.user_id AND w.label = m.sensitivity
 WHERE m.id = ANY(CAST(:ids AS uuid[]))
 ORDER BY 1, 2
""")

# A turn scan's cursor (0027): the last seq read.
ADVANCE_TURNS = text("""
UPDATE engine.relabel_progress
   SET after_seq = COALESCE(CAST(:after AS bigint), after_seq), scanned = scanned + :scanned,
       labelled = labelled + :labelled, updated_at = now(),
       done_at = CASE WHEN :done THEN now() ELSE NULL END
 WHERE labeller = :labeller
RETURNING scanned, labelled, done_at
""")

# (user, label) pairs among ``:users``/``:labels`` whose user withheld the label.
WITHHELD_PAIRS = text("""
SELECT DISTINCT w.user_id, w.label
  FROM unnest(CAST(:users AS uuid[]), CAST(:labels AS text[])) AS c(user_id, label)
  JOIN engine.sensitivity_withheld w ON w.user_id = c.user_id AND w.label = c.label
 ORDER BY 1, 2
""")

PROGRESS = text("SELECT * FROM engine.relabel_progress WHERE labeller = :labeller")


def start(conn: Connection, labeller: str, *, restart: bool = False) -> None:
    conn.execute(START, {"labeller": labeller, "restart": restart})


def lock(conn: Connection, labeller: str) -> Any:
    return conn.execute(LOCK, {"labeller": labeller}).one()


def batch(conn: Connection, *, after: uuid.UUID | None, cutoff: Any, n: int) -> list[Any]:
    """The next ``n`` unlabelled memories created before ``cutoff``, in id order."""
    return list(conn.execute(BATCH, {"after": str(after) if after else None,
                                     "cutoff": cutoff, "n": n}).all())


def set_labels(conn: Connection, labels: Sequence[tuple[uuid.UUID, str]]) -> list[uuid.UUID]:
    """Label the rows still unlabelled; the ids labelled."""
    if not labels:
        return []
    return [r.id for r in conn.execute(SET_LABELS, {"ids": [i for i, _ in labels],
                                                    "labels": [lab for _, lab in labels]})]


def withheld_hits(conn: Connection, ids: Sequence[uuid.UUID]) -> list[tuple[uuid.UUID, str]]:
    """(user, label) of the rows among ``ids`` whose label their user has withheld."""
    if not ids:
        return []
    return [(r.user_id, r.label) for r in conn.execute(WITHHELD_HITS, {"ids": list(ids)})]


def advance(conn: Connection, labeller: str, *, after: uuid.UUID | None, scanned: int,
            labelled: int, done: bool) -> Any:
    return conn.execute(ADVANCE, {"labeller": labeller, "after": str(after) if after else None,
                                  "scanned": scanned, "labelled": labelled,
                                  "done": done}).one()


def advance_turns(conn: Connection, key: str, *, after: int | None, scanned: int,
                  labelled: int, done: bool) -> Any:
    """Move a turn scan's cursor (its row ``key``, ``<labeller>:turns``) past ``after``."""
    return conn.execute(ADVANCE_TURNS, {"labeller": key, "after": after, "scanned": scanned,
                                        "labelled": labelled, "done": done}).one()


def withheld_pairs(conn: Connection, pairs: Sequence[tuple[uuid.UUID, str]]
                   ) -> list[tuple[uuid.UUID, str]]:
    """The (user, label) pairs among ``pairs`` whose user withheld the label."""
    if not pairs:
        return []
    return [(r.user_id, r.label) for r in conn.execute(WITHHELD_PAIRS, {
        "users": [u for u, _ in pairs], "labels": [lab for _, lab in pairs]})]


def progress(conn: Connection, labeller: str) -> dict[str, Any] | None:
    row = conn.execute(PROGRESS, {"labeller": labeller}).first()
    return dict(row._mapping) if row else None
