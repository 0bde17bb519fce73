"""Read-side statements for the CLI: status, listings, progress of a sweep, the demo summary.

Kept apart from :mod:`eros.memory.db.repo` (the worker's write path) because none of these take part
in a claim; they only look. The backlog predicates mirror ``repo.CLAIM_IDLE`` — change both
together.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select, text

from eros.db.schema import chat_messages, chat_sessions, companion_memories
from eros.memory.core.claims import Claim
from eros.memory.db.repo import (
    FRESH_CLAIM,
    IDLE,
    IN_FLIGHT_WHERE,
    NOT_BACKING_OFF,
    OPEN,
    STALE_CLAIM,
)


@dataclass(frozen=True)
class SessionState:
    """One session's bookkeeping, read without claiming it (``eros classify --dry-run``)."""

    id: uuid.UUID
    user_id: uuid.UUID
    instance_id: uuid.UUID | None
    last_active_at: datetime
    classified_at: datetime | None
    dead_lettered_at: datetime | None
    classification_claimed_at: datetime | None
    attempts: int
    classified_through_seq: int
    outcome: str | None
    last_error: str | None
    messages: int


def session_state(conn: Connection, session_id: uuid.UUID) -> SessionState | None:
    s = chat_sessions.c
    messages = (select(func.count()).select_from(chat_messages)
                .where(chat_messages.c.session_id == s.id).scalar_subquery())
    row = conn.execute(select(
        s.id, s.user_id, s.instance_id, s.last_active_at, s.classified_at, s.dead_lettered_at,
        s.classification_claimed_at, s.attempts, s.classified_through_seq, s.outcome,
        s.last_error, messages.label("messages")).where(s.id == session_id)).first()
    return SessionState(**row._mapping) if row is not None else None


def count_sessions(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(chat_sessions)).scalar_one())


# --- status ---------------------------------------------------------------------------------
#: the claim predicate without the claimed condition: work not done yet, in flight included.
_ELIGIBLE = f"{OPEN} AND {IDLE} AND {NOT_BACKING_OFF}"

SESSION_COUNTS = text(f"""
SELECT count(*) AS sessions,
       count(DISTINCT user_id) AS users,
       count(*) FILTER (WHERE classified_at IS NOT NULL) AS classified,
       count(*) FILTER (WHERE {_ELIGIBLE}) AS eligible,
       count(*) FILTER (WHERE {_ELIGIBLE}
                          AND (classification_claimed_at IS NULL OR {STALE_CLAIM})) AS claimable,
       EXTRACT(EPOCH FROM now() - min(last_active_at) FILTER (WHERE {_ELIGIBLE}))
           AS oldest_idle_secs,
       count(*) FILTER (WHERE {OPEN} AND next_attempt_at > now()) AS waiting_retry,
       count(*) FILTER (WHERE {OPEN} AND NOT ({IDLE})) AS not_idle_yet,
       count(*) FILTER (WHERE {OPEN} AND {FRESH_CLAIM}) AS in_flight,
       count(*) FILTER (WHERE {OPEN} AND {STALE_CLAIM}) AS stale_claims,
       count(*) FILTER (WHERE dead_lettered_at IS NOT NULL) AS dead_letters
  FROM engine.chat_sessions
""")


def session_counts(conn: Connection, *, idle_secs: float, stale_secs: float) -> dict[str, Any]:
    row = conn.execute(SESSION_COUNTS, {"idle_secs": idle_secs, "stale_secs": stale_secs}).one()
    counts = dict(row._mapping)
    oldest = counts.pop("oldest_idle_secs")
    counts = {k: int(v) for k, v in counts.items()}
    counts["oldest_idle_secs"] = round(float(oldest), 1) if oldest is not None else None
    return counts


def outcome_counts(conn: Connection) -> dict[str, dict[str, int]]:
    """Latest outcome per session, and every run's outcome over the last 24 hours."""
    sessions = conn.execute(text(
        "SELECT outcome, count(*) FROM engine.chat_sessions WHERE outcome IS NOT NULL"
        " GROUP BY outcome ORDER BY outcome")).all()
    runs = conn.execute(text(
        "SELECT outcome, count(*) FROM engine.classification_runs"
        " WHERE finished_at > now() - interval '24 hours' GROUP BY outcome ORDER BY outcome")).all()
    return {"sessions": {r[0]: int(r[1]) for r in sessions},
            "runs_24h": {r[0]: int(r[1]) for r in runs}}


def dead_letters(conn: Connection, limit: int = 5) -> list[dict[str, Any]]:
    rows = conn.execute(text(
        "SELECT id, dead_lettered_at, attempts, last_error FROM engine.chat_sessions"
        " WHERE dead_lettered_at IS NOT NULL ORDER BY dead_lettered_at DESC LIMIT :n"),
        {"n": limit}).all()
    return [{"session_id": str(r.id), "dead_lettered_at": r.dead_lettered_at.isoformat(),
             "last_error": r.last_error} for r in rows]


def recent_errors(conn: Connection, limit: int = 5) -> list[dict[str, Any]]:
    rows = conn.execute(text(
        "SELECT session_id, attempt, outcome, error, finished_at FROM engine.classification_runs"
        " WHERE error IS NOT NULL ORDER BY finished_at DESC, id DESC LIMIT :n"),
        {"n": limit}).all()
    return [{"session_id": str(r.session_id), "attempt": r.attempt, "outcome": r.outcome,
             "error": r.error, "finished_at": r.finished_at.isoformat()} for r in rows]


def memory_counts(conn: Connection) -> dict[str, int]:
    row = conn.execute(text(
        "SELECT count(*) AS total, count(*) FILTER (WHERE status = 'current') AS current,"
        " count(DISTINCT user_id) AS users FROM engine.companion_memories")).one()
    return {k: int(v) for k, v in row._mapping.items()}


# --- listings -------------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryFilter:
    """What ``eros memories`` shows; new options add a field here and a clause below."""

    user_id: uuid.UUID
    category: str | None = None
    instance_id: uuid.UUID | None = None
    include_all: bool = False
    limit: int = 50
    #: ``profile`` (instance_id NULL) or ``relationship`` (any persona); None = both.
    layer: str | None = None


def list_memories(conn: Connection, f: MemoryFilter) -> list[dict[str, Any]]:
    """A user's memories, newest first (current ones only unless ``include_all``)."""
    m = companion_memories.c
    stmt = (select(m.id, m.content, m.category, m.importance, m.created_at, m.instance_id,
                   m.status, m.session_id, m.replaced_by, m.embedding_model,
                   m.source_seqs, m.source_fallback, m.sensitivity)
            .where(m.user_id == f.user_id)
            .order_by(m.created_at.desc(), m.category, m.id).limit(f.limit))
    if f.category:
        stmt = stmt.where(m.category == f.category)
    if f.instance_id:
        stmt = stmt.where(m.instance_id == f.instance_id)
    if f.layer is not None:
        stmt = stmt.where(m.instance_id.is_(None) if f.layer == "profile"
                          else m.instance_id.is_not(None))
    if not f.include_all:
        stmt = stmt.where(m.status == "current")
    return [dict(r._mapping) for r in conn.execute(stmt)]


USERS = text("""
SELECT s.user_id, s.sessions, s.classified, COALESCE(m.memories, 0) AS memories, s.last_active_at
  FROM (SELECT user_id, count(*) AS sessions,
               count(*) FILTER (WHERE classified_at IS NOT NULL) AS classified,
               max(last_active_at) AS last_active_at
          FROM engine.chat_sessions GROUP BY user_id) s
  LEFT JOIN (SELECT user_id, count(*) AS memories FROM engine.companion_memories
              WHERE status = 'current' GROUP BY user_id) m USING (user_id)
 ORDER BY s.last_active_at DESC
 LIMIT :n
""")


def list_users(conn: Connection, limit: int = 50) -> list[dict[str, Any]]:
    return [dict(r._mapping) for r in conn.execute(USERS, {"n": limit})]


SUMMARY = text("""
SELECT user_id, category, count(*) AS n,
       (array_agg(content ORDER BY importance DESC NULLS LAST, created_at DESC))[1:3] AS samples
  FROM engine.companion_memories
 WHERE status = 'current'
 GROUP BY user_id, category
 ORDER BY user_id, n DESC, category
""")


def summary_by_user(conn: Connection) -> list[dict[str, Any]]:
    """Current memories per user and category, with the most important few (the demo)."""
    return [dict(r._mapping) for r in conn.execute(SUMMARY)]


# --- following a sweep ----------------------------------------------------------------------
PROGRESS = text("""
SELECT c.id, (s.claim_token IS DISTINCT FROM c.token
              OR s.classified_at IS NOT NULL OR s.dead_lettered_at IS NOT NULL) AS done,
       s.outcome, s.memory_count
  FROM unnest(CAST(:ids AS uuid[]), CAST(:tokens AS uuid[])) AS c(id, token)
  LEFT JOIN engine.chat_sessions s ON s.id = c.id
""")


def claims_progress(conn: Connection, claims: Sequence[Claim]) -> list[dict[str, Any]]:
    """For each claim, whether it has ended: the session was stamped, dead-lettered or its
    claim released (a permanent error) or taken over. A retry countdown keeps the claim."""
    if not claims:
        return []
    rows = conn.execute(PROGRESS, {"ids": [c.session_id for c in claims],
                                   "tokens": [c.token for c in claims]})
    return [dict(r._mapping) for r in rows]


COST_DAYS = text("""
SELECT day::date AS day, sessions, runs, prompt_tokens, completion_tokens, embedding_tokens,
       cost_usd
  FROM engine.dreaming_cost_daily ORDER BY day DESC LIMIT :days
""")
COST_TOTALS = text("""
SELECT (SELECT COALESCE(avg(cost_usd), 0) FROM engine.dreaming_cost_per_session)
         AS per_session,
       (SELECT COALESCE(avg(cost_usd_30d), 0) FROM engine.dreaming_cost_per_user_month)
         AS per_user_month,
       (SELECT count(*) FROM engine.dreaming_cost_per_user_month) AS active_users_30d,
       (SELECT COALESCE(sum(cost_usd_30d), 0) FROM engine.dreaming_cost_per_user_month)
         AS last_30_days
""")


def cost_report(conn: Connection, days: int = 7) -> dict[str, Any]:
    """Cost per day (newest first), average per session, and the estimated cost per active
    user per month (the last 30 days' cost of each user who had a session classified)."""
    daily = [{"day": r.day.isoformat(), "sessions": int(r.sessions), "runs": int(r.runs),
              "prompt_tokens": int(r.prompt_tokens), "completion_tokens": int(r.completion_tokens),
              "embedding_tokens": int(r.embedding_tokens), "cost_usd": float(r.cost_usd)}
             for r in conn.execute(COST_DAYS, {"days": days})]
    t = conn.execute(COST_TOTALS).one()
    return {"daily": daily, "per_session_usd": float(t.per_session),
            "per_user_month_usd": float(t.per_user_month),
            "active_users_30d": int(t.active_users_30d),
            "last_30_days_usd": float(t.last_30_days)}


# --- the backlog figures the metrics endpoint reads at scrape time ----------------------------
@dataclass(frozen=True)
class Backlog:
    eligible: int
    oldest_idle_secs: float
    in_flight: int
    dead_letters: int


BACKLOG = text(f"""
SELECT
  (SELECT count(*) FROM engine.chat_sessions
    WHERE {OPEN} AND {IDLE} AND (classification_claimed_at IS NULL OR {STALE_CLAIM}))
    AS eligible,
  (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(last_active_at)), 0)
     FROM engine.chat_sessions WHERE {OPEN} AND {IDLE}) AS oldest_idle_secs,
  (SELECT count(*) FROM engine.chat_sessions WHERE {IN_FLIGHT_WHERE}) AS in_flight,
  (SELECT count(*) FROM engine.chat_sessions WHERE dead_lettered_at IS NOT NULL)
    AS dead_letters
""")


def backlog_snapshot(conn: Connection, *, idle_secs: float, stale_secs: float) -> Backlog:
    """The figures ops watch; every subquery is served by a partial index."""
    row = conn.execute(BACKLOG, {"idle_secs": idle_secs, "stale_secs": stale_secs}).one()
    return Backlog(int(row.eligible), float(row.oldest_idle_secs), int(row.in_flight),
                   int(row.dead_letters))
