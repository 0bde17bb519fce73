"""Erasure: the statements that forget a user, a relationship or one memory.

Every forget runs in ONE transaction (the caller's) in this order, which is what makes it
race-free against a classification or consolidation in flight:

1. take the user's consolidation advisory lock (blocking, the same key a pass's write takes
   with ``pg_try_advisory_xact_lock``): a pass that is writing is waited for, and a pass that
   tries to write later gives up as "busy" until the forget has committed; then the user's
   cells lock (a clustering pass writing is waited for; one writing later finds rows it read
   gone and drops the cells instead of writing centroids of forgotten vectors);
2. mark the sessions read (which also clears their claim tokens): a classify that is writing
   holds the session row, so the UPDATE waits for its commit; a classify that writes later
   finds its token gone and commits nothing;
3. only then delete — each DELETE is a new statement, so under READ COMMITTED it sees every
   row the waited-for writers committed.

Consolidation's own check (the claim in ``consolidation_state``, re-read under its row lock
in the pass's write) covers a pass that takes the advisory lock after the forget committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from eros.memory.db.user_lock import LOCK_KEY, LOCK_NAMESPACE
from eros.recall.db import cells_sql, turn_cells_sql, turns_sql

#: What a forget removed, by table (the task's JSON result).
Counts = dict[str, int]

LOCK_USER = text(f"SELECT pg_advisory_xact_lock({LOCK_KEY})")

_SCOPE = """user_id = :user_id
   AND (CAST(:instance_id AS uuid) IS NULL OR instance_id = CAST(:instance_id AS uuid))"""

# The sessions' row locks first, in a statement of their own: a turn being inserted holds its
# session row (the touch trigger), so this waits for it to commit, and MARK_READ — a new
# statement, a new snapshot under READ COMMITTED — then counts it as read. Computed in the
# same statement as the lock, max(seq) would come from the snapshot taken before the wait.
LOCK_SESSIONS = text(f"SELECT id FROM engine.chat_sessions WHERE {_SCOPE} ORDER BY id"
                     " FOR UPDATE")

# "Read through the last turn": the watermark moves to the newest message, the claim (token)
# is dropped, and every bookkeeping field that could quote text is cleared. The erasure floor
# (the tombstone) moves there too: a force or requeue --from-start later resets the
# watermark to the floor, never below it. Turns arriving later reset classified_at through
# the chat_messages trigger and are learned as usual.
# last_seq is the session's newest seq, kept by the seq trigger under the session row lock
# (0009), so it is exact here and re-read after any lock wait.
MARK_READ_SET = """
UPDATE engine.chat_sessions AS s
   SET classified_at = now(), classification_claimed_at = NULL, claim_token = NULL,
       next_attempt_at = NULL, attempts = 0, dead_lettered_at = NULL,
       classified_through_seq = GREATEST(s.classified_through_seq, s.last_seq),
       erased_through_seq = GREATEST(s.erased_through_seq, s.last_seq),
       outcome = 'forgotten', outcome_at = now(), memory_count = 0, last_error = NULL
"""
MARK_READ = text(MARK_READ_SET + """ WHERE s.user_id = :user_id
   AND (CAST(:instance_id AS uuid) IS NULL OR s.instance_id = CAST(:instance_id AS uuid))
RETURNING s.id
""")

# The memories a forget removes: every memory of the user, or the relationship layer of one
# persona (instance_id set; the profile layer, instance_id NULL, stays).
SCOPE_MEMORIES = text(f"SELECT id FROM engine.companion_memories WHERE {_SCOPE}")

# One memory's lineage: up through the merges that folded it into a canonical row (they say
# the same thing), then down through everything that row merged or superseded, recursively —
# by replaced_by and by memory_history's source lists.
LINEAGE = text("""
WITH RECURSIVE up(id, status, replaced_by) AS (
    SELECT id, status, replaced_by FROM engine.companion_memories WHERE id = :memory_id
    UNION
    SELECT m.id, m.status, m.replaced_by
      FROM up JOIN engine.companion_memories m ON m.id = up.replaced_by
     WHERE up.status = 'merged'),
down(id) AS (
    SELECT id FROM up
    UNION
    SELECT x.id FROM down CROSS JOIN LATERAL (
        SELECT m.id FROM engine.companion_memories m WHERE m.replaced_by = down.id
        UNION
        SELECT unnest(h.source_ids) FROM engine.memory_history h
         WHERE h.result_id = down.id) AS x)
SELECT d.id, m.user_id FROM down d JOIN engine.companion_memories m ON m.id = d.id
""")

# Canonicals derived from a forgotten memory: from the lineage, up every
# replaced_by link whose target says what its source said — the source was *merged* into it,
# or the target is a row consolidation wrote (metadata ``consolidated_from``: the model's
# text, rewritten from its sources, superseded ones included). A kept member (a memory whose
# own extracted text became the canonical) is not derived from what it superseded.
DERIVED = text("""
WITH RECURSIVE d(id) AS (
    SELECT t.id FROM engine.companion_memories m
      JOIN engine.companion_memories t ON t.id = m.replaced_by
     WHERE m.id = ANY(CAST(:ids AS uuid[]))
       AND (m.status = 'merged' OR t.metadata ? 'consolidated_from')
    UNION
    SELECT t.id FROM d JOIN engine.companion_memories m ON m.id = d.id
      JOIN engine.companion_memories t ON t.id = m.replaced_by
     WHERE m.status = 'merged' OR t.metadata ? 'consolidated_from')
SELECT id FROM d WHERE NOT (id = ANY(CAST(:ids AS uuid[])))
""")

# The other sources of a derived canonical that goes: current again, and back in the
# consolidation backlog, so the next pass rewrites them without the forgotten memory through
# the normal path (the canonical's text may carry the forgotten fact; theirs does not). A source
# the guard quarantined (eros rescreen) stays quarantined.
RESTORE = text("""
UPDATE engine.companion_memories
   SET status = 'current', replaced_by = NULL, replaced_at = NULL, consolidation_seen_at = NULL
 WHERE replaced_by = ANY(CAST(:derived AS uuid[])) AND NOT (id = ANY(CAST(:ids AS uuid[])))
   AND status IN ('merged', 'superseded')
RETURNING id, user_id, created_at
""")
REBACKLOG = text("""
INSERT INTO engine.consolidation_backlog (memory_id, user_id, created_at)
SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:users AS uuid[]),
                     CAST(:created AS timestamptz[]))
ON CONFLICT DO NOTHING
""")

# The sessions a memory was learned from, locked (a classify writing one is waited for) and
# their claims dropped, in statements of their own: a classify that read the source turns
# before the forget committed then finds its token gone and writes nothing; one that reads
# later no longer sees them (ERASE_TURNS). The session is claimable again at once.
# By provenance: the memory's own session AND every session of the user holding one
# of its source turns — a canonical row consolidation wrote has no session of its own, and a
# kept member's source_seqs are the union of its members', which span other sessions (their
# member rows may be gone: HISTORY_RETENTION_DAYS).
SOURCE_SESSIONS = text("""
SELECT id FROM engine.chat_sessions
 WHERE user_id = :user_id
   AND id IN (SELECT session_id FROM engine.companion_memories
               WHERE id = ANY(CAST(:ids AS uuid[])) AND session_id IS NOT NULL
              UNION
              SELECT c.session_id FROM engine.companion_memories mem
               CROSS JOIN LATERAL unnest(mem.source_seqs) AS q(seq)
               JOIN engine.chat_messages c ON c.seq = q.seq
               WHERE mem.id = ANY(CAST(:ids AS uuid[])))
 ORDER BY id FOR UPDATE
""")
FENCE_SESSIONS = text("""
UPDATE engine.chat_sessions SET claim_token = NULL, classification_claimed_at = NULL
 WHERE id = ANY(CAST(:sessions AS uuid[])) AND claim_token IS NOT NULL
RETURNING id
""")

# The memory tombstone: the forgotten memories' source turns leave every later extraction of
# their session (``chat_sessions.erased_seqs``, which repo.READ_NEW_TURNS skips). Which turns,
# for each forgotten memory of the lineage: its provenance (``source_seqs``: the
# turns it cites, or its extraction window when the citation was missing —
# ``source_fallback``) in WHICHEVER of the user's sessions they are (a canonical row
# has no session, a kept member's sources span its members' sessions; seq is one global
# identity, so a seq names one turn); for a row written before provenance (NULL), the
# extraction window its metadata records in its own session (``source_seq`` [first, last]);
# without either, every turn its session had. Only turns that exist now: a turn written later
# is learned as usual. The sessions are locked already (SOURCE_SESSIONS), so the arrays read
# here are the ones this UPDATE replaces; RETURNING counts the turns newly tombstoned.
ERASE_TURNS = text("""
WITH mem AS (
    SELECT id, user_id, session_id, source_seqs, metadata FROM engine.companion_memories
     WHERE id = ANY(CAST(:ids AS uuid[]))),
turns AS (
    SELECT c.session_id, c.seq
      FROM mem CROSS JOIN LATERAL unnest(mem.source_seqs) AS q(seq)
      JOIN engine.chat_messages c ON c.seq = q.seq
      JOIN engine.chat_sessions s ON s.id = c.session_id AND s.user_id = mem.user_id
    UNION
    SELECT c.session_id, c.seq
      FROM mem JOIN engine.chat_messages c ON c.session_id = mem.session_id
     WHERE mem.source_seqs IS NULL
       AND CASE WHEN jsonb_typeof(mem.metadata -> 'source_seq') = 'array'
                THEN c.seq BETWEEN (mem.metadata -> 'source_seq' ->> 0)::bigint
                               AND (mem.metadata -> 'source_seq' ->> -1)::bigint
                ELSE true END),
fresh AS (
    SELECT t.session_id, array_agg(t.seq ORDER BY t.seq) AS seqs
      FROM turns t JOIN engine.chat_sessions s ON s.id = t.session_id
     WHERE s.erased_seqs IS NULL OR t.seq <> ALL(s.erased_seqs)
     GROUP BY t.session_id)
UPDATE engine.chat_sessions s SET erased_seqs = COALESCE(s.erased_seqs, '{}') || f.seqs
  FROM fresh f WHERE s.id = f.session_id
RETURNING cardinality(f.seqs) AS n
""")

# Recall cells whose centroids were computed from forgotten vectors: dropped (every sketch of
# the user is scanned until the next cells pass re-clusters them, see recall_cells.due).
UNCELL_SKETCHES = text("UPDATE engine.memory_sketches SET cell = NULL"
                       " WHERE user_id = :user_id AND cell IS NOT NULL")

DELETE_HISTORY_OF = text("""
DELETE FROM engine.memory_history
 WHERE result_id = ANY(CAST(:ids AS uuid[])) OR source_ids && CAST(:ids AS uuid[])
RETURNING id
""")

DELETE_MEMORIES = text("""
DELETE FROM engine.companion_memories WHERE id = ANY(CAST(:ids AS uuid[])) RETURNING id
""")

DELETE_USER_HISTORY = text("DELETE FROM engine.memory_history WHERE user_id = :user_id"
                           " RETURNING id")
DELETE_USER_MEMORIES = text("DELETE FROM engine.companion_memories WHERE user_id = :user_id"
                            " RETURNING id")
DELETE_CELLS = text("DELETE FROM engine.memory_cells WHERE user_id = :user_id RETURNING cell")
DELETE_STATE = text("DELETE FROM engine.consolidation_state WHERE user_id = :user_id"
                    " RETURNING user_id")
# A relationship forget keeps the user's state but drops any error text it recorded.
CLEAR_STATE_ERROR = text("UPDATE engine.consolidation_state SET last_error = NULL"
                         " WHERE user_id = :user_id")

DELETE_RUNS = text("""
DELETE FROM engine.classification_runs
 WHERE session_id = ANY(CAST(:sessions AS uuid[])) OR (CAST(:instance_id AS uuid) IS NULL
                                                       AND user_id = :user_id)
RETURNING id
""")

DELETE_MESSAGES = text("""
DELETE FROM engine.chat_messages WHERE session_id = ANY(CAST(:sessions AS uuid[])) RETURNING id
""")
DELETE_SESSIONS = text("""
DELETE FROM engine.chat_sessions WHERE id = ANY(CAST(:sessions AS uuid[])) RETURNING id
""")


def lock_user(conn: Connection, user_id: uuid.UUID) -> None:
    """Wait for (and then exclude) the user's consolidation and cells writes until this
    transaction ends (a cells pass that read before the forget then finds its rows gone)."""
    conn.execute(LOCK_USER, {"ns": LOCK_NAMESPACE, "user_id": str(user_id)})
    cells_sql.lock_user(conn, user_id, "0")  # 0: no lock_timeout for the forget


def _n(conn: Connection, stmt: Any, params: dict[str, Any]) -> int:
    return len(conn.execute(stmt, params).all())


def forget_user(conn: Connection, user_id: uuid.UUID, *, instance_id: uuid.UUID | None = None,
                sessions: bool = False) -> Counts:
    """Forget a user (``instance_id`` None) or one relationship; call inside one transaction."""
    p: dict[str, Any] = {"user_id": user_id,
                         "instance_id": str(instance_id) if instance_id else None}
    lock_user(conn, user_id)
    conn.execute(LOCK_SESSIONS, p)
    session_ids = [r.id for r in conn.execute(MARK_READ, p)]
    counts: Counts = {"sessions_marked_read": len(session_ids)}
    if instance_id is None:
        counts["history"] = _n(conn, DELETE_USER_HISTORY, p)
        counts["memories"] = _n(conn, DELETE_USER_MEMORIES, p)
        counts["cells"] = _n(conn, DELETE_CELLS, p)
        counts["consolidation_state"] = _n(conn, DELETE_STATE, p)
    else:
        ids = [r.id for r in conn.execute(SCOPE_MEMORIES, p)]
        counts["history"] = _n(conn, DELETE_HISTORY_OF, {"ids": ids})
        counts["memories"] = _n(conn, DELETE_MEMORIES, {"ids": ids})
        counts["cells"] = drop_cells(conn, user_id) if counts["memories"] else 0
        conn.execute(CLEAR_STATE_ERROR, p)
    counts["runs"] = _n(conn, DELETE_RUNS, {**p, "sessions": session_ids})
    # the turns recall layer (0025): the user's (or the persona's) turn vectors
    counts["indexed_turns"] = turns_sql.delete_turns_for_user(conn, user_id,
                                                             instance_id=instance_id)
    counts["messages"] = counts["sessions_deleted"] = 0
    if sessions:
        counts["messages"] = _n(conn, DELETE_MESSAGES, {"sessions": session_ids})
        counts["sessions_deleted"] = _n(conn, DELETE_SESSIONS, {"sessions": session_ids})
        counts["sessions_marked_read"] = 0
    return counts


def drop_cells(conn: Connection, user_id: uuid.UUID) -> int:
    """Drop the user's recall cells (their centroids averaged vectors now forgotten); every
    sketch is scanned until the next cells pass. Call with :func:`lock_user` held."""
    dropped = _n(conn, DELETE_CELLS, {"user_id": user_id})
    if dropped:
        conn.execute(UNCELL_SKETCHES, {"user_id": user_id})
        turn_cells_sql.uncell_user_turns(conn, user_id)
    return dropped


def forget_memory(conn: Connection, memory_id: uuid.UUID) -> tuple[uuid.UUID | None, Counts]:
    """Forget one memory, its lineage and the canonicals derived from it; tombstone its
    source turns. Call inside one transaction. Returns the memory's user (None when it did
    not exist) and the counts. Idempotent."""
    rows = conn.execute(LINEAGE, {"memory_id": memory_id}).all()
    if not rows:
        return None, dict(ZERO_MEMORY_COUNTS)
    user_id: uuid.UUID = rows[0].user_id
    lock_user(conn, user_id)
    # re-read under the lock: a pass that was writing may have extended the lineage
    ids = [r.id for r in conn.execute(LINEAGE, {"memory_id": memory_id})]
    return user_id, erase_memories(conn, user_id, ids)


#: what :func:`erase_memories` counts.
ZERO_MEMORY_COUNTS: Counts = {"memories": 0, "history": 0, "derived": 0, "restored": 0,
                              "erased_turns": 0, "sessions_fenced": 0, "cells": 0,
                              "indexed_turns": 0}

#: the turn vectors (0025) of the erased memories' source turns.
DELETE_SOURCE_TURN_VECTORS = text("""
DELETE FROM engine.memory_turns WHERE seq IN (
    SELECT unnest(source_seqs) FROM engine.companion_memories
     WHERE id = ANY(CAST(:ids AS uuid[])) AND source_seqs IS NOT NULL)
RETURNING seq
""")


def erase_memories(conn: Connection, user_id: uuid.UUID, ids: Sequence[uuid.UUID]) -> Counts:
    """Erase these memories of one user for good — the building block of every erasure of
    chosen memories (``forget --memory``'s lineage, ``forget --sensitive``'s labels): fence a
    classification in flight on their source sessions, tombstone their source turns
    (``erased_seqs``), delete them with the canonicals derived from them (restoring those
    canonicals' other sources for the next consolidation pass) and every history row naming
    them, and drop the user's recall cells. Call inside one transaction, after
    :func:`lock_user` (then the set is stable against consolidation)."""
    counts = dict(ZERO_MEMORY_COUNTS)
    if not ids:
        return counts
    ids = list(ids)
    sessions = [r.id for r in conn.execute(SOURCE_SESSIONS, {"ids": ids,
                                                               "user_id": user_id})]
    counts["sessions_fenced"] = _n(conn, FENCE_SESSIONS, {"sessions": sessions})
    counts["erased_turns"] = sum(r.n for r in conn.execute(ERASE_TURNS, {"ids": ids}))
    # a tombstoned turn is not recallable either: its vector goes (0025)
    counts["indexed_turns"] = _n(conn, DELETE_SOURCE_TURN_VECTORS, {"ids": ids})
    derived = [r.id for r in conn.execute(DERIVED, {"ids": ids})]
    restored = conn.execute(RESTORE, {"derived": derived, "ids": ids}).all()
    if restored:
        conn.execute(REBACKLOG, {"ids": [r.id for r in restored],
                                 "users": [r.user_id for r in restored],
                                 "created": [r.created_at for r in restored]})
    gone = [*ids, *derived]
    counts.update(derived=len(derived), restored=len(restored),
                  history=_n(conn, DELETE_HISTORY_OF, {"ids": gone}),
                  memories=_n(conn, DELETE_MEMORIES, {"ids": gone}))
    counts["cells"] = drop_cells(conn, user_id) if counts["memories"] else 0
    return counts


SENSITIVE_MEMORIES = text("""
SELECT id FROM engine.companion_memories
 WHERE user_id = :user_id AND sensitivity IS NOT NULL
   AND (CAST(:label AS text) IS NULL OR sensitivity = CAST(:label AS text))
 ORDER BY created_at, id
""")


# A sensitive forget's fence: every session of the user a classification holds,
# locked (one that is writing is waited for, and what it wrote is then seen and erased) and
# its claim dropped — an attempt that read the user's withheld labels before this forget
# committed then commits nothing, and the session is extracted again at once, without them.
LOCK_CLAIMED = text("""
SELECT id FROM engine.chat_sessions WHERE user_id = :user_id AND claim_token IS NOT NULL
 ORDER BY id FOR UPDATE
""")
RELEASE_CLAIMED = text("""
UPDATE engine.chat_sessions SET claim_token = NULL, classification_claimed_at = NULL
 WHERE user_id = :user_id AND claim_token IS NOT NULL
RETURNING id
""")


def forget_sensitive(conn: Connection, user_id: uuid.UUID, label: str | None, *,
                     turns: Sequence[int] = ()) -> Counts:
    """Every memory of the user with a special-category label (``label``, or any when None)
    and the lineage of each (what it merged or superseded, as ``forget --memory`` takes),
    erased by :func:`erase_memories` (derived canonicals, tombstoned source turns): consent
    withdrawn for that category, the rest kept. Classifications of the user in
    flight are fenced first (``claims_released``). Call inside one transaction."""
    lock_user(conn, user_id)
    conn.execute(LOCK_CLAIMED, {"user_id": user_id})
    released = _n(conn, RELEASE_CLAIMED, {"user_id": user_id})
    ids: dict[uuid.UUID, None] = {}
    for row in conn.execute(SENSITIVE_MEMORIES, {"user_id": user_id, "label": label}).all():
        if row.id not in ids:
            ids.update((r.id, None) for r in conn.execute(LINEAGE, {"memory_id": row.id}))
    counts = erase_memories(conn, user_id, list(ids))
    # turns with the label (0025), cited by such a memory or labelled by themselves, and the
    # ones the caller found about it under a more sensitive label (a turn keeps only its most
    # sensitive label)
    counts["indexed_turns"] += turns_sql.delete_turns_labelled(conn, user_id, label)
    counts["indexed_turns"] += turns_sql.delete_turns_for_user_seqs(conn, user_id, turns)
    return {**counts, "claims_released": released}


def lineage_ids(conn: Connection, memory_id: uuid.UUID) -> Sequence[uuid.UUID]:
    """The ids :func:`forget_memory` would remove (for the CLI's confirmation)."""
    return [r.id for r in conn.execute(LINEAGE, {"memory_id": memory_id})]
