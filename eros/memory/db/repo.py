"""The statements eros runs and the functions that run them; every function takes a
``Connection`` so the caller decides the transaction (one for a memory write plus its stamp)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, func, select, text

from eros.core.text import normalise_for_dedup
from eros.core.transcript import Turn
from eros.db.schema import companion_memories
from eros.memory.core.claims import Attempt, Claim, Outcome
from eros.memory.db import attempt_sql, write_sql

# The original dreaming-lite claim (one UPDATE over a FOR UPDATE SKIP LOCKED subquery), plus: a
# fresh token per claim, the attempt backoff gate and the dead-letter and archive exclusions.
# ix_chat_sessions_claimable serves the subquery in last_active_at order (archived sessions are
# not in it at all).
CLAIM_IDLE = text("""
UPDATE engine.chat_sessions
   SET classification_claimed_at = now(),
       claim_token = gen_random_uuid()
 WHERE id IN (SELECT id FROM engine.chat_sessions
               WHERE classified_at IS NULL
                 AND dead_lettered_at IS NULL
                 AND archived_at IS NULL
                 AND last_active_at < now() - make_interval(secs => :idle_secs)
                 AND (classification_claimed_at IS NULL
                      OR classification_claimed_at < now() - make_interval(secs => :stale_secs))
                 AND (next_attempt_at IS NULL OR next_attempt_at <= now())
               ORDER BY last_active_at
               LIMIT :batch
               FOR UPDATE SKIP LOCKED)
RETURNING id, user_id, instance_id, claim_token
""")

CLAIM_ONE = text("""
UPDATE engine.chat_sessions
   SET classification_claimed_at = now(),
       claim_token = gen_random_uuid(),
       dead_lettered_at = CASE WHEN :force THEN NULL ELSE dead_lettered_at END,
       classified_at = CASE WHEN :force THEN NULL ELSE classified_at END,
       attempts = CASE WHEN :force THEN 0 ELSE attempts END,
       classified_through_seq = CASE WHEN :force THEN erased_through_seq
                                     ELSE classified_through_seq END
 WHERE id = :session_id
   AND archived_at IS NULL
   AND (:force OR (classified_at IS NULL
                   AND dead_lettered_at IS NULL
                   AND (classification_claimed_at IS NULL
                        OR classification_claimed_at < now() - make_interval(secs => :stale_secs))))
RETURNING id, user_id, instance_id, claim_token
""")

# Heartbeat plus attempt count: a run only starts while the claim token is still ours and the
# session has not been archived since it was claimed. RETURNING also carries the labels the
# user withheld (one primary-key probe for the one row, no statement of its own).
BEGIN_ATTEMPT = text("""
UPDATE engine.chat_sessions AS s
   SET attempts = attempts + 1, classification_claimed_at = now()
 WHERE id = :session_id AND claim_token = :token AND archived_at IS NULL
RETURNING user_id, instance_id, attempts, classified_through_seq,
          ARRAY(SELECT w.label FROM engine.sensitivity_withheld w
                 WHERE w.user_id = s.user_id) AS withheld
""")

RECORD_RETRY = text("""
UPDATE engine.chat_sessions
   SET classification_claimed_at = now(), outcome = 'retrying', outcome_at = now(),
       last_error = :error
 WHERE id = :session_id AND claim_token = :token
RETURNING id
""")

# A permanent provider error: not stamped; the claim is released and the session waits
# next_attempt_at before the sweeper may try again (the attempt cap then dead-letters it).
RELEASE = text("""
UPDATE engine.chat_sessions
   SET classification_claimed_at = NULL, claim_token = NULL,
       next_attempt_at = now() + make_interval(secs => :delay_secs),
       outcome = :outcome, outcome_at = now(), last_error = :error
 WHERE id = :session_id AND claim_token = :token
RETURNING id
""")

DEAD_LETTER = text("""
UPDATE engine.chat_sessions
   SET dead_lettered_at = now(), classification_claimed_at = NULL, claim_token = NULL,
       outcome = 'dead_letter', outcome_at = now(), last_error = :error
 WHERE id = :session_id AND claim_token = :token
RETURNING id
""")


def _claims(rows: Sequence[Any]) -> list[Claim]:
    return [Claim(r.id, r.user_id, r.instance_id, r.claim_token) for r in rows]


def claim_idle(conn: Connection, *, idle_secs: float, stale_secs: float, batch: int) -> list[Claim]:
    """Claim up to ``batch`` idle sessions; concurrent claimers get disjoint sets."""
    rows = conn.execute(CLAIM_IDLE, {"idle_secs": idle_secs, "stale_secs": stale_secs,
                                     "batch": batch}).all()
    return _claims(rows)


def claim_one(conn: Connection, session_id: uuid.UUID, *, stale_secs: float,
              force: bool = False) -> Claim | None:
    """Claim one session for a shell invocation; None if classified or claimed elsewhere."""
    rows = conn.execute(CLAIM_ONE, {"session_id": session_id, "stale_secs": stale_secs,
                                    "force": force}).all()
    return _claims(rows)[0] if rows else None


def begin_attempt(conn: Connection, session_id: uuid.UUID, token: uuid.UUID, *,
                  read_turns: bool = False) -> Attempt | None:
    """Count an attempt and refresh the claim; None when the token is no longer the claim's.

    With ``read_turns`` the new turns come with it, in the same statement (one round trip;
    eros/memory/db/attempt_sql.py says why its watermark is the one ``read_new_turns`` would give),
    which may run on an AUTOCOMMIT connection as a transaction of its own."""
    if read_turns:
        rows = conn.execute(attempt_sql.START_ATTEMPT,
                            {"session_id": session_id, "token": token}).all()
        if not rows:
            return None
        first = rows[0]
        through = max(int(first.classified_through_seq), int(first.last_seq))
        turns = tuple(Turn(r.role, r.content, r.sent_at, r.seq, r.channel)
                      for r in rows if r.seq is not None)
        return Attempt(Claim(session_id, first.user_id, first.instance_id, token),
                       first.attempts, first.classified_through_seq, (turns, through),
                       frozenset(first.withheld or ()))
    row = conn.execute(BEGIN_ATTEMPT, {"session_id": session_id, "token": token}).first()
    if row is None:
        return None
    claim = Claim(session_id, row.user_id, row.instance_id, token)
    return Attempt(claim, row.attempts, row.classified_through_seq, None,
                   frozenset(row.withheld or ()))


def load_turns(conn: Connection, session_id: uuid.UUID, *, after_seq: int) -> list[Turn]:
    """All turns past the watermark in conversation order (sent_at, then insertion order)."""
    return read_new_turns(conn, session_id, after_seq=after_seq)[0]


# One statement, so the turns and the session's last_seq come from one snapshot. Every
# channel is read: the watermark must pass unread channels too, or they would hold the
# session open (extraction filters them, core/channels.py).
# The tombstones are applied here, where every extraction reads its turns, so no
# path that resets the watermark (force, requeue --from-start) can reach an erased turn:
# nothing at or below the session's erasure floor (a user or persona forget), and no turn a
# memory forget took out (erased_seqs). Two plain comparisons, not GREATEST(:after_seq, …):
# with GREATEST the prepared statement kept being re-planned (custom plans), 20% slower
# (bench/tombstone_bench.py).
READ_NEW_TURNS = text("""
SELECT s.last_seq, m.role, m.content, m.sent_at, m.seq, m.channel
  FROM engine.chat_sessions AS s
  LEFT JOIN engine.chat_messages AS m
         ON m.session_id = s.id AND m.seq > :after_seq AND m.seq > s.erased_through_seq
        AND (s.erased_seqs IS NULL OR m.seq <> ALL(s.erased_seqs))
 WHERE s.id = :session_id
 ORDER BY m.sent_at, m.seq
""")


def read_new_turns(conn: Connection, session_id: uuid.UUID, *,
                   after_seq: int) -> tuple[list[Turn], int]:
    """The turns past the watermark and the watermark that covers them.

    The watermark is the session's last_seq in the same snapshot (never below ``after_seq``):
    seq is drawn under the session row's lock, so every turn at or below it is committed and
    in the snapshot, and a turn deleted after it was written cannot keep FINISH from stamping.
    """
    rows = conn.execute(READ_NEW_TURNS, {"session_id": session_id, "after_seq": after_seq}).all()
    turns = [Turn(r.role, r.content, r.sent_at, r.seq, r.channel)
             for r in rows if r.seq is not None]
    last = max([after_seq, *(int(r.last_seq) for r in rows[:1])])
    return turns, last


def dedup_key(session_id: uuid.UUID, content: str) -> str:
    """One memory per session and normalised content: a redelivered task, a forced re-run
    or a resumed session restating a fact can never write the same memory twice."""
    digest = hashlib.sha256(normalise_for_dedup(content).encode()).hexdigest()[:32]
    return f"{session_id}:{digest}"


def run_params(attempt: Attempt, outcome: Outcome, task_id: str | None) -> dict[str, Any]:
    """The binds of an attempt's row in ``classification_runs`` (write_sql's ``_RUN_*``)."""
    return {"session_id": attempt.claim.session_id, "user_id": attempt.claim.user_id,
            "task_id": task_id, "attempt": attempt.attempt, "outcome": outcome.kind,
            "model": outcome.model, "prompt_tokens": outcome.prompt_tokens,
            "completion_tokens": outcome.completion_tokens,
            "embedding_tokens": outcome.embedding_tokens, "error": outcome.error,
            "cost_usd": outcome.cost_usd, "guard_dropped": outcome.guard_dropped}


def record_run(conn: Connection, attempt: Attempt, outcome: Outcome, *, memory_count: int = 0,
               task_id: str | None = None) -> None:
    conn.execute(write_sql.RECORD_RUN, {**run_params(attempt, outcome, task_id),
                                        "memory_count": memory_count})


def record_retry(conn: Connection, attempt: Attempt, outcome: Outcome,
                 task_id: str | None = None) -> bool:
    """Keep the claim alive across a Celery retry countdown; False if it was lost."""
    ok = conn.execute(RECORD_RETRY, {"session_id": attempt.claim.session_id,
                                     "token": attempt.claim.token,
                                     "error": outcome.error}).first() is not None
    if ok:
        record_run(conn, attempt, outcome, task_id=task_id)
    return ok


def release(conn: Connection, attempt: Attempt, outcome: Outcome, *, delay_secs: float,
            task_id: str | None = None) -> bool:
    ok = conn.execute(RELEASE, {"session_id": attempt.claim.session_id,
                                "token": attempt.claim.token, "delay_secs": delay_secs,
                                "outcome": outcome.kind, "error": outcome.error}).first()
    if ok is not None:
        record_run(conn, attempt, outcome, task_id=task_id)
    return ok is not None


def dead_letter(conn: Connection, attempt: Attempt, outcome: Outcome,
                task_id: str | None = None) -> bool:
    ok = conn.execute(DEAD_LETTER, {"session_id": attempt.claim.session_id,
                                    "token": attempt.claim.token,
                                    "error": outcome.error}).first()
    if ok is not None:
        record_run(conn, attempt, outcome, task_id=task_id)
    return ok is not None


REQUEUE = text("""
UPDATE engine.chat_sessions
   SET dead_lettered_at = NULL, attempts = 0, next_attempt_at = NULL, claim_token = NULL,
       classification_claimed_at = NULL, classified_at = NULL,
       classified_through_seq = CASE WHEN :from_start THEN erased_through_seq
                                     ELSE classified_through_seq END
 WHERE (:all_dead AND dead_lettered_at IS NOT NULL) OR id = ANY(CAST(:ids AS uuid[]))
RETURNING id
""")


def requeue(conn: Connection, session_ids: Sequence[uuid.UUID] = (), *, dead_letters: bool = False,
            from_start: bool = False) -> int:
    """Make sessions eligible again (after fixing what dead-lettered them)."""
    rows = conn.execute(REQUEUE, {"ids": list(session_ids), "all_dead": dead_letters,
                                  "from_start": from_start}).all()
    return len(rows)


def count_memories(conn: Connection, session_id: uuid.UUID) -> int:
    m = companion_memories.c
    return int(conn.execute(select(func.count()).where(m.session_id == session_id)).scalar_one())


THROTTLED = text("""
UPDATE engine.chat_sessions
   SET attempts = GREATEST(attempts - 1, 0), classification_claimed_at = now()
 WHERE id = :session_id AND claim_token = :token
RETURNING id
""")


def record_throttled(conn: Connection, attempt: Attempt) -> bool:
    """A global limit made this run wait: it does not count as an attempt; claim kept alive."""
    return conn.execute(THROTTLED, {"session_id": attempt.claim.session_id,
                                    "token": attempt.claim.token}).first() is not None


# Predicates the status report and the metrics share (one spelling of each idea).
OPEN = "classified_at IS NULL AND dead_lettered_at IS NULL AND archived_at IS NULL"
IDLE = "last_active_at < now() - make_interval(secs => :idle_secs)"
NOT_BACKING_OFF = "(next_attempt_at IS NULL OR next_attempt_at <= now())"
FRESH_CLAIM = "classification_claimed_at >= now() - make_interval(secs => :stale_secs)"
STALE_CLAIM = "classification_claimed_at < now() - make_interval(secs => :stale_secs)"
#: claimed and not finished, claim not stale; served by ix_chat_sessions_claimed.
IN_FLIGHT_WHERE = f"claim_token IS NOT NULL AND {FRESH_CLAIM}"

IN_FLIGHT = text(f"SELECT count(*) FROM engine.chat_sessions WHERE {IN_FLIGHT_WHERE}")


#: one transaction-level lock around count-then-claim: overlapping beats (two beat processes,
#: a sweep from the shell) take turns, so together they never pass DREAMING_MAX_IN_FLIGHT.
CLAIM_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended('eros.claim', 0))")


def claim_within_ceiling(conn: Connection, *, ceiling: int, batch: int, idle_secs: float,
                         stale_secs: float) -> tuple[list[Claim], int]:
    """Top the in-flight count up to ``ceiling`` and no further; returns the claims and the
    count found. Claimers take turns (CLAIM_LOCK, held until the caller commits), so the
    count of one always includes the claims of the one before."""
    conn.execute(CLAIM_LOCK)
    in_flight = count_in_flight(conn, stale_secs=stale_secs)
    want = min(batch, ceiling - in_flight)
    if want <= 0:
        return [], in_flight
    return claim_idle(conn, idle_secs=idle_secs, stale_secs=stale_secs, batch=want), in_flight


def count_in_flight(conn: Connection, *, stale_secs: float) -> int:
    """Claimed and not finished (queued, running or waiting for a retry), claims not stale."""
    return int(conn.execute(IN_FLIGHT, {"stale_secs": stale_secs}).scalar_one())
