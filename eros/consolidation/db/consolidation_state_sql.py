"""A user's consolidation state (``engine.consolidation_state``): the claim a pass starts
under and re-reads under lock, its heartbeat, outcome and error — kept apart from the pass's
reads and writes of memories (:mod:`eros.consolidation.db.consolidation_sql`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from eros.core.outcomes import ConsolidationOutcome

# Only a user with memories is claimed: a pass queued before the user was forgotten must not
# create their state row again.
BEGIN_PASS = text("""
INSERT INTO engine.consolidation_state AS s (user_id, claimed_at, attempts)
SELECT CAST(:user_id AS uuid), now(), 1
 WHERE EXISTS (SELECT 1 FROM engine.companion_memories WHERE user_id = :user_id)
ON CONFLICT (user_id) DO UPDATE SET claimed_at = now(), attempts = s.attempts + 1
RETURNING s.attempts
""")

# What the finder measured (seen_until, measured_backlog) is cleared: whatever is still
# uncompared after a pass — a backlog, deferred clusters — is measured again by the next run.
# Whether a backlog is left is read in the same statement (the claim stays for the next
# chunk when the caller enqueues it: ``keep_claim_on_backlog``) and returned.
_BACKLOG = "EXISTS (SELECT 1 FROM engine.consolidation_backlog WHERE user_id = :user_id)"
FINISH_PASS = text(f"""
INSERT INTO engine.consolidation_state AS s
       (user_id, seen_until, last_run_at, claimed_at, attempts, near_dup_share_before,
        near_dup_share_after, merged_total, superseded_total, last_outcome, last_error)
VALUES (:user_id, NULL, now(), CASE WHEN :keep_claim AND {_BACKLOG} THEN now() END, 0,
        :before, :after, :merged, :superseded, :outcome, :error)
ON CONFLICT (user_id) DO UPDATE SET
       seen_until = NULL, measured_backlog = NULL, last_run_at = now(),
       claimed_at = EXCLUDED.claimed_at, attempts = 0,
       near_dup_share_before = EXCLUDED.near_dup_share_before,
       near_dup_share_after = EXCLUDED.near_dup_share_after,
       merged_total = s.merged_total + EXCLUDED.merged_total,
       superseded_total = s.superseded_total + EXCLUDED.superseded_total,
       last_outcome = EXCLUDED.last_outcome, last_error = EXCLUDED.last_error
RETURNING {_BACKLOG} AS backlog
""")

# A failed pass: nothing about the memories changes, the attempt stays counted. An UPDATE,
# never an insert: begin_pass made the row, and a forget that deleted it since must win.
RECORD_FAILURE = text("""
UPDATE engine.consolidation_state AS s SET
       last_run_at = now(),
       claimed_at = CASE WHEN :keep_claim THEN now() ELSE NULL END,
       last_outcome = :outcome, last_error = :error,
       near_dup_share_before = COALESCE(CAST(:before AS double precision),
                                        s.near_dup_share_before)
 WHERE user_id = :user_id
""")

# The pass's claim, re-read under the row lock in its write transaction.
CLAIMED_AT = text("SELECT claimed_at FROM engine.consolidation_state WHERE user_id = :user_id")
CLAIM_HELD = text("SELECT claimed_at FROM engine.consolidation_state WHERE user_id = :user_id"
                  " FOR UPDATE")

STATE = text("SELECT * FROM engine.consolidation_state WHERE user_id = :user_id")


def begin_pass(conn: Connection, user_id: uuid.UUID) -> int | None:
    """Count an attempt and refresh the claim (the heartbeat of a pass); the attempt number,
    or None when the user has no memories (nothing to consolidate, e.g. forgotten)."""
    value = conn.execute(BEGIN_PASS, {"user_id": user_id}).scalar()
    return None if value is None else int(value)


def claimed_at(conn: Connection, user_id: uuid.UUID) -> datetime | None:
    """The claim a pass starts under (set by begin_pass): its token."""
    return conn.execute(CLAIMED_AT, {"user_id": user_id}).scalar()


def claim_held(conn: Connection, user_id: uuid.UUID, claim: datetime | None) -> bool:
    """Whether the state row still carries the claim the pass read, locking it: a forget
    deletes the row, a newer pass re-stamps it; either way this pass must write nothing."""
    row = conn.execute(CLAIM_HELD, {"user_id": user_id}).first()
    return (row.claimed_at if row is not None else None) == claim


def finish_pass(conn: Connection, user_id: uuid.UUID, *, before: float, after: float,
                merged: int, superseded: int, outcome: ConsolidationOutcome,
                error: str | None = None,
                keep_claim_on_backlog: bool = False) -> bool:
    """Whether memories are left uncompared (a backlog). ``keep_claim_on_backlog``: the
    caller enqueues the user's next chunk when there is one, so the claim stays then."""
    return bool(conn.execute(FINISH_PASS, {
        "user_id": user_id, "before": before, "after": after, "merged": merged,
        "superseded": superseded, "outcome": outcome, "error": error,
        "keep_claim": keep_claim_on_backlog}).scalar_one())


def record_failure(conn: Connection, user_id: uuid.UUID, *, outcome: ConsolidationOutcome,
                   error: str | None,
                   before: float | None = None, keep_claim: bool = False) -> None:
    """``keep_claim`` keeps the user claimed through a retry countdown."""
    conn.execute(RECORD_FAILURE, {"user_id": user_id, "outcome": outcome,
                                  "error": (error or "")[:2000] or None, "before": before,
                                  "keep_claim": keep_claim})


def state(conn: Connection, user_id: uuid.UUID) -> dict[str, Any] | None:
    row = conn.execute(STATE, {"user_id": user_id}).first()
    return dict(row._mapping) if row is not None else None
