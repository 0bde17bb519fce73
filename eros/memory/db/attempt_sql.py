"""The statement that starts a classify attempt: count it, refresh the claim and read the
session's new turns, in one round trip (run by :func:`eros.memory.db.repo.begin_attempt`).

Why one statement: the attempt was a transaction of its own — BEGIN, the UPDATE,
the turns' SELECT, COMMIT — four round trips, each a wake-up of the worker and of a PostgreSQL
backend, for work that fits in one statement. As one statement it can also run outside an
explicit transaction (its own implicit one), so the BEGIN and COMMIT messages go too.

What each part reads, and why that keeps the guarantees of the two-statement form:

- the fence (claim token, not archived) and the attempt count are the UPDATE's, on the row's
  newest version once its lock is ours, as before;
- the tombstones (``erased_through_seq``, ``erased_seqs``) come from that same locked row
  (the UPDATE's RETURNING), so a forget that committed before our lock is applied even though
  the turns are read from the statement's snapshot (no extraction reaches an erased
  turn);
- the watermark (``last_seq``) and the turns come from one snapshot, the statement's: seq is
  drawn under the session row's lock, so every turn at or below that ``last_seq`` is in the
  snapshot. A turn committed after the snapshot has a higher seq; FINISH re-reads ``last_seq``
  under the lock and leaves the session unclassified for it (the same as a turn arriving
  during the model call).
"""

from __future__ import annotations

from sqlalchemy import text

# ``seen`` is a plain read of the session row: the snapshot's version, not the CTE's update
# (every part of one statement shares its snapshot and never sees another part's writes).
# Zero rows: the claim is no longer ours. One row with NULL turn columns: no new turns.
START_ATTEMPT = text("""
WITH attempt AS (
    UPDATE engine.chat_sessions AS s
       SET attempts = attempts + 1, classification_claimed_at = now()
     WHERE id = :session_id AND claim_token = :token AND archived_at IS NULL
    RETURNING s.user_id, s.instance_id, s.attempts, s.classified_through_seq,
              s.erased_through_seq, s.erased_seqs,
              ARRAY(SELECT w.label FROM engine.sensitivity_withheld w
                     WHERE w.user_id = s.user_id) AS withheld
)
SELECT a.user_id, a.instance_id, a.attempts, a.classified_through_seq, a.withheld,
       seen.last_seq, m.role, m.content, m.sent_at, m.seq, m.channel
  FROM attempt AS a
 CROSS JOIN (SELECT last_seq FROM engine.chat_sessions WHERE id = :session_id) AS seen
  LEFT JOIN engine.chat_messages AS m
         ON m.session_id = :session_id AND m.seq > a.classified_through_seq
        AND m.seq > a.erased_through_seq
        AND (a.erased_seqs IS NULL OR m.seq <> ALL(a.erased_seqs))
 ORDER BY m.sent_at, m.seq
""")
