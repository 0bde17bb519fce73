"""Retention: the statements that delete what is kept past MESSAGE_RETENTION_DAYS
and HISTORY_RETENTION_DAYS, in bounded batches (one short transaction each, so a large first
run never holds locks for long): messages a chunk of sessions at a time in primary-key order
(one pass over the sessions per run), replaced memories a batch of rows at a time.

- **messages**: the turns of a session at or below its watermark (``classified_through_seq``)
  when the session was stamped more than N days ago and not resumed since (``classified_at``
  set): the watermark then passed every one of them at least N days ago. A resumed session
  keeps its old turns until it is classified again and N more days pass (conservative: never
  early). The session row stays (its bookkeeping, its erasure floor).
  Sessions no classification will ever stamp count from when they left the
  pipeline: a **dead-lettered** session's turns sent before ``dead_lettered_at``, and an
  **archived** session's turns sent before ``archived_at``, once that was more than N days
  ago (a requeue clears ``dead_lettered_at``: its turns are then kept like any others).
- **history**: memory rows merged or superseded more than N days ago (``replaced_at``), and
  rows the guard **quarantined** more than N days ago (``replaced_at``, set when quarantined),
  with every ``memory_history`` row that names them (as result or source); their
  sources first move to the row they ended in (``FOLD``), so an erasure of that
  row still covers the turns they came from.
- **turn vectors** (``memory_turns``): a deleted message's vector goes in the same
  statement (counted; the foreign key cascades too, for any other delete), and a turn the
  guard quarantined goes HISTORY_RETENTION_DAYS after it was indexed.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from eros.recall.db import turn_trust_sql

# One chunk of sessions in primary-key order after :after (keyset pagination: a run reads the
# sessions table once, however many messages it deletes), and their passed turns.
MESSAGES = text("""
WITH s AS (
    SELECT id, classified_at, classified_through_seq, dead_lettered_at, archived_at
      FROM engine.chat_sessions
     WHERE id > CAST(:after AS uuid)
       AND (classified_at < now() - make_interval(days => :days)
            OR dead_lettered_at < now() - make_interval(days => :days)
            OR archived_at < now() - make_interval(days => :days))
     ORDER BY id
     LIMIT :sessions),
d AS (
    DELETE FROM engine.chat_messages m USING s
     WHERE m.session_id = s.id
       AND ((s.classified_at < now() - make_interval(days => :days)
             AND m.seq <= s.classified_through_seq)
            OR (s.dead_lettered_at < now() - make_interval(days => :days)
                AND m.sent_at <= s.dead_lettered_at)
            OR (s.archived_at < now() - make_interval(days => :days)
                AND m.sent_at <= s.archived_at))
    RETURNING m.seq),
v AS (
    DELETE FROM engine.memory_turns t USING d WHERE t.seq = d.seq RETURNING t.seq)
SELECT (SELECT CAST(id AS text) FROM s ORDER BY id DESC LIMIT 1) AS last,
       (SELECT count(*) FROM d) AS deleted, (SELECT count(*) FROM v) AS vectors,
       (SELECT count(*) FROM s) AS sessions
""")

# Turns the guard quarantined (never recalled, kept for ``rescreen --restore-turn``)
# go HISTORY_RETENTION_DAYS after they were indexed, like quarantined memories (0027's
# partial index: only quarantined turns are in it).
QUARANTINED_TURNS = text("""
WITH q AS (
    SELECT seq FROM engine.memory_turns
     WHERE status = 'quarantined' AND indexed_at < now() - make_interval(days => :days)
     LIMIT :batch FOR UPDATE SKIP LOCKED)
DELETE FROM engine.memory_turns t USING q WHERE t.seq = q.seq
RETURNING t.seq
""")

REPLACED = text("""
SELECT id FROM engine.companion_memories
 WHERE status IN ('merged', 'superseded', 'quarantined')
   AND replaced_at < now() - make_interval(days => :days)
 LIMIT :batch
 FOR UPDATE SKIP LOCKED
""")
# Provenance outlives the rows retention deletes: before merged and superseded rows
# go, their sources move to the row they ended in (up replaced_by, past rows deleted in the same
# batch) — its own and theirs, each resolved as the erasure resolves it (source_seqs; written
# before provenance: the extraction window in its session, flagged). Consolidation already
# unions recorded sources, so only rows with NULL sources change anything (no rewrite else).
FOLD = text("""
WITH RECURSIVE chain(member, target) AS (
    SELECT id, replaced_by FROM engine.companion_memories
     WHERE id = ANY(CAST(:ids AS uuid[])) AND replaced_by IS NOT NULL
    UNION
    SELECT c.member, t.replaced_by FROM chain c
      JOIN engine.companion_memories t ON t.id = c.target
     WHERE t.id = ANY(CAST(:ids AS uuid[])) AND t.replaced_by IS NOT NULL),
pairs(owner, id) AS (
    SELECT target, member FROM chain WHERE NOT (target = ANY(CAST(:ids AS uuid[])))
    UNION
    SELECT target, target FROM chain WHERE NOT (target = ANY(CAST(:ids AS uuid[])))),
seqs(owner, seq, fallback) AS (
    SELECT p.owner, q.seq, m.source_fallback
      FROM pairs p JOIN engine.companion_memories m ON m.id = p.id
     CROSS JOIN LATERAL unnest(m.source_seqs) AS q(seq)
    UNION
    SELECT p.owner, c.seq, true
      FROM pairs p JOIN engine.companion_memories m ON m.id = p.id
      JOIN engine.chat_messages c ON c.session_id = m.session_id
     WHERE m.source_seqs IS NULL
       AND CASE WHEN jsonb_typeof(m.metadata -> 'source_seq') = 'array'
                THEN c.seq BETWEEN (m.metadata -> 'source_seq' ->> 0)::bigint
                               AND (m.metadata -> 'source_seq' ->> -1)::bigint
                ELSE true END),
agg AS (
    SELECT owner, array_agg(DISTINCT seq ORDER BY seq) AS seqs, bool_or(fallback) AS fallback
      FROM seqs GROUP BY owner)
UPDATE engine.companion_memories t
   SET source_seqs = a.seqs, source_fallback = t.source_fallback OR a.fallback
  FROM agg a
 WHERE t.id = a.owner AND t.source_seqs IS DISTINCT FROM a.seqs
RETURNING t.id
""")
HISTORY = text("""
DELETE FROM engine.memory_history
 WHERE result_id = ANY(CAST(:ids AS uuid[])) OR source_ids && CAST(:ids AS uuid[])
RETURNING id
""")
MEMORIES = text("""
DELETE FROM engine.companion_memories
 WHERE id = ANY(CAST(:ids AS uuid[])) AND status IN ('merged', 'superseded', 'quarantined')
RETURNING id
""")


#: the smallest UUID: where a run's keyset starts.
FIRST = "00000000-0000-0000-0000-000000000000"


def delete_messages(conn: Connection, *, days: int, after: str,
                    sessions: int) -> tuple[str | None, int, int]:
    """The passed turns of up to ``sessions`` sessions after ``after`` (a UUID string), with
    their vectors (``memory_turns``; the foreign key's cascade would take them too, uncounted);
    (the last session id read, None when none was left; messages deleted; vectors deleted)."""
    row = conn.execute(MESSAGES, {"days": days, "after": after, "sessions": sessions}).one()
    return (row.last if row.sessions else None), int(row.deleted), int(row.vectors)


def delete_quarantined_turns(conn: Connection, *, days: int, batch: int) -> int:
    """One batch of quarantined turn vectors indexed more than ``days`` ago; how many."""
    return len(conn.execute(QUARANTINED_TURNS, {"days": days, "batch": batch}).all())


def delete_replaced(conn: Connection, *, days: int, batch: int) -> tuple[int, int]:
    """One batch of replaced memories past their retention and their history; (memories,
    history rows) deleted."""
    ids = [r.id for r in conn.execute(REPLACED, {"days": days, "batch": batch})]
    if not ids:
        return 0, 0
    folded = [r.id for r in conn.execute(FOLD, {"ids": ids})]
    # the turns a survivor now cites take its label (a cited turn inherits it)
    turn_trust_sql.inherit_labels(conn, folded)
    history = len(conn.execute(HISTORY, {"ids": ids}).all())
    return len(conn.execute(MEMORIES, {"ids": ids}).all()), history
