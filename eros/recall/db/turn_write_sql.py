"""The turns recall layer's fenced write: what the classify path and
``eros turns backfill`` index, in one statement.

Fenced like the memories a session learns: a turn is written only while its session says the
turn was read and not erased — at or below ``classified_through_seq``, above the erasure
floor (``erased_through_seq``, a user or persona forget), not in ``erased_seqs`` (a memory,
message or sensitive forget's tombstone) and the session not archived. Read in this
statement, so:

- classify runs it inside the statement that stamps the session (its ``fence`` CTE locks the
  session's row while the claim is ours and gives the watermark being moved to), and a
  forget that fenced the claim first leaves that CTE empty: nothing is written at all;
- the backfill runs it under the user's erasure lock (:func:`eros.privacy.db.forget_sql.lock_user`,
  which every forget takes first): a forget that committed before is seen here, one that
  starts after waits for this transaction and then deletes what it wrote.

Each message is locked ``FOR KEY SHARE`` before the insert (what the foreign key's check takes
anyway): a message deleted meanwhile (retention, the product) is skipped rather than failing
the foreign key, and cannot be deleted until this transaction ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sqlalchemy import Connection, text

from eros.core.sensitivity import SENSITIVITY_ORDER
from eros.recall.db.turns_sql import T, TurnRow, turn_params

#: the labels most sensitive first, as a SQL array (constants of the code, not user input)
_ORDER = "ARRAY[" + ", ".join(f"'{label}'" for label in SENSITIVITY_ORDER) + "]::text[]"

_ROWS = """t AS (
    SELECT * FROM unnest(CAST(:turn_seqs AS bigint[]), CAST(:turn_sessions AS uuid[]),
                         CAST(:turn_users AS uuid[]), CAST(:turn_instances AS uuid[]),
                         CAST(:turn_said_at AS timestamptz[]), CAST(:turn_models AS text[]),
                         CAST(:turn_sensitivities AS text[]), CAST(:turn_statuses AS text[]))
        WITH ORDINALITY AS t(seq, session_id, user_id, instance_id, said_at, embedding_model,
                             sensitivity, status, ord)
)"""


def _insert(dim: str, conflict: str) -> str:
    """The turns of ``t`` that ``live`` lets through; ``dim`` names the vectors' size bind."""
    return f"""INSERT INTO {T} AS cur (seq, session_id, user_id, instance_id, said_at, embedding,
                     embedding_model, sensitivity, status)
    SELECT t.seq, t.session_id, t.user_id, t.instance_id, t.said_at,
           CAST(f.v[(t.ord - 1) * f.dim + 1 : t.ord * f.dim] AS halfvec),
           t.embedding_model, t.sensitivity, t.status
      FROM t JOIN live ON live.seq = t.seq
     CROSS JOIN (SELECT CAST(:turn_embeddings AS real[]) AS v, CAST(:{dim} AS integer) AS dim) f
    ON CONFLICT (seq) DO {conflict}
    RETURNING status"""


#: classify's: a re-run re-judges the turn, so its row replaces the old one — except its label,
#: which only ever becomes more sensitive: a label set since (a model relabel, a citing memory
#: labelled later) is kept when the re-run's own labeller or reply would not give it.
_REPLACE = f"""UPDATE
       SET embedding = EXCLUDED.embedding, embedding_model = EXCLUDED.embedding_model,
           sensitivity = ({_ORDER})[least(array_position({_ORDER}, cur.sensitivity),
                                          array_position({_ORDER}, EXCLUDED.sensitivity))],
           status = EXCLUDED.status, indexed_at = now()"""

#: the backfill's: the fence read from the sessions' rows; a turn already indexed (by
#: classify, meanwhile) is left as it is.
KEEP = text(f"""WITH {_ROWS}, live AS (
    SELECT m.seq FROM engine.chat_messages m
      JOIN engine.chat_sessions s ON s.id = m.session_id
     WHERE m.seq = ANY(CAST(:turn_seqs AS bigint[]))
       AND m.seq <= s.classified_through_seq AND m.seq > s.erased_through_seq
       AND (s.erased_seqs IS NULL OR m.seq <> ALL(s.erased_seqs))
       AND s.archived_at IS NULL
       FOR KEY SHARE OF m
), written AS ({_insert("dim", "NOTHING")})
SELECT status, count(*) AS n FROM written GROUP BY status""")

#: classify's, inside its one finishing statement (:mod:`eros.dreaming.db.finish_sql`): the
#: same fence, read from that statement's ``fence`` CTE — the session's row, locked, with the
#: watermark the statement moves it to (``through_seq``); binds ``:turn_*`` and
#: ``:turn_dim``; ``indexed`` returns each written turn's status.
TURN_CTES = f"""{_ROWS}, live AS (
    SELECT m.seq FROM engine.chat_messages m CROSS JOIN fence
     WHERE m.session_id = fence.id AND m.seq = ANY(CAST(:turn_seqs AS bigint[]))
       AND m.seq <= fence.through_seq AND m.seq > fence.erased_through_seq
       AND (fence.erased_seqs IS NULL OR m.seq <> ALL(fence.erased_seqs))
       FOR KEY SHARE OF m
), indexed AS ({_insert("turn_dim", _REPLACE)})"""


def write_fenced(conn: Connection, rows: Sequence[TurnRow]) -> Counter[str]:
    """Index ``rows`` as far as their sessions allow (the fence above), leaving a turn
    already indexed as it is (the backfill's write); the rows written by status."""
    if not rows:
        return Counter()
    result = conn.execute(KEEP, turn_params(rows))
    return Counter({str(r.status): int(r.n) for r in result})
