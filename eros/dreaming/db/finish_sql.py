"""The end of a classify attempt in one statement: the session stamped, its memories and
the attempt's row written, its user turns indexed — one round trip, atomic by itself.

Why one statement: it used to be a transaction of five round trips (BEGIN, the stamp, the
memories, the turns, COMMIT). A gevent worker runs 128 attempts on one thread, and when a
wave of model replies lands together each round trip waits behind every other ready task's
CPU, so the write held its connection for ~0.4 s and its slot longer (bench/RESULTS.md,
issue 34 item 1). Now it is one.

The fence is the ``fence`` CTE: the session's row, locked ``FOR UPDATE`` while the claim is
ours and the session is not archived. Like the UPDATE it replaces, a row lock held by
another transaction (a forget, a new turn, an archive) is waited for, and the row is then
re-read at its newest version and re-checked: a forget that fenced the claim first leaves
the CTE empty and the statement writes nothing; ``last_seq`` is the newest (a turn that
arrived meanwhile keeps the session unclassified for the next tick). Every other part
reads ``fence``: no row, no memory, no run row, no turn.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, TextClause, text
from sqlalchemy.dialects.postgresql import psycopg as psycopg_dialect

from eros.memory.core.claims import Attempt, MemoryRow, Outcome
from eros.memory.core.layers import route_instance
from eros.memory.db import provenance_sql, write_sql
from eros.memory.db.repo import dedup_key, run_params
from eros.recall.db import turn_write_sql
from eros.recall.db.turns_sql import TurnRow, turn_params

FINISH_SESSION = text(f"""
WITH fence AS (
    SELECT s.id, GREATEST(s.classified_through_seq, CAST(:through_seq AS bigint)) AS through_seq,
           s.erased_through_seq, s.erased_seqs
      FROM engine.chat_sessions AS s
     WHERE s.id = CAST(:session_id AS uuid) AND s.claim_token = CAST(:token AS uuid)
       AND s.archived_at IS NULL
       FOR UPDATE
), {write_sql.MEMORY_CTES}, stamped AS (
    UPDATE engine.chat_sessions AS s
       SET classified_at = CASE WHEN s.last_seq > :through_seq THEN NULL ELSE now() END,
           classification_claimed_at = NULL,
           claim_token = NULL,
           next_attempt_at = NULL,
           attempts = 0,
           classified_through_seq = fence.through_seq,
           outcome = :outcome, outcome_at = now(), memory_count = counted.n, model = :model,
           prompt_tokens = s.prompt_tokens + :prompt_tokens,
           completion_tokens = s.completion_tokens + :completion_tokens,
           embedding_tokens = s.embedding_tokens + :embedding_tokens,
           last_error = :error, guard_dropped = :guard_dropped
      FROM fence CROSS JOIN counted
     WHERE s.id = fence.id
), {turn_write_sql.TURN_CTES}
SELECT (SELECT count(*) FROM fence) AS fenced, (SELECT n FROM counted) AS memories,
       (SELECT CAST(coalesce(json_object_agg(status, n), '{{}}') AS text)
          FROM (SELECT status, count(*) AS n FROM indexed GROUP BY status) AS i) AS turns
""")


#: psycopg caches the parse of a statement (its placeholders turned into ``$n``) only up to
#: this many bytes (``psycopg._queries.MAX_CACHED_STATEMENT_LENGTH``); a longer one is split
#: afresh on every execute
CACHED_STATEMENT_BYTES = 4096


def compact(statement: TextClause) -> tuple[str, dict[str, str]]:
    """``statement`` as the driver's SQL (``%(name)s`` placeholders), compacted to fit
    psycopg's statement cache, and the short name of each bind parameter.

    Why: FINISH_SESSION compiles to 5,834 bytes, over :data:`CACHED_STATEMENT_BYTES`, so
    psycopg re-split it on every session (≈ 0.22 ms of the worker's CPU, bench/RESULTS.md).
    The same statement in fewer bytes: ``CAST(%(x)s AS t)`` written ``%(x)s::t`` (the same
    cast), whitespace runs as one space and none beside brackets and commas, and each bind
    parameter named ``p0``, ``p1``, … . String literals are checked unchanged; no server-side
    prepare is involved (PgBouncer in transaction mode is unaffected)."""
    dialect = psycopg_dialect.dialect()  # type: ignore[no-untyped-call]
    sql = str(statement.compile(dialect=dialect))
    if "--" in sql or "/*" in sql:  # one line would comment out the rest of the statement
        raise ValueError("compacting a statement with comments would change it")
    literals = re.findall(r"'[^']*'", sql)
    sql = re.sub(r"CAST\((%\(\w+\)s) AS ([\w\[\]]+)\)", r"\1::\2", sql)
    sql = re.sub(r" ?([(),\[\]]) ?", r"\1", re.sub(r"\s+", " ", sql).strip())
    names = {n: f"p{i}" for i, n in enumerate(dict.fromkeys(re.findall(r"%\((\w+)\)s", sql)))}
    sql = re.sub(r"%\((\w+)\)s", lambda m: f"%({names[m.group(1)]})s", sql)
    if re.findall(r"'[^']*'", sql) != literals:  # a literal with spaces or brackets in it
        raise ValueError("compacting the statement would change a string literal")
    return sql, names


#: what :func:`finish_session` sends (``exec_driver_sql``: already in the driver's form)
FINISH_SQL, _FINISH_NAMES = compact(FINISH_SESSION)


@dataclass(frozen=True)
class Finished:
    """What the statement wrote: memories new to the session, turns indexed by status."""

    memories: int
    turns: Counter[str]


def memory_rows(attempt: Attempt, memories: Sequence[MemoryRow]) -> str:
    """The ``:memories`` bind of :data:`eros.memory.db.write_sql.MEMORY_CTES`: one JSON array,
    a positional array per memory in the order its ``candidate`` CTE reads them. Not ASCII-
    escaped: the text goes to the server as the UTF-8 psycopg sends every string in, so a
    string it could not encode (a lone surrogate) fails as it did in a ``text[]``."""
    claim = attempt.claim
    rows = []
    for m in memories:
        instance_id = route_instance(m.layer, claim.instance_id)
        rows.append([None if instance_id is None else str(instance_id), m.content, m.category,
                     None if m.importance is None else float(m.importance), m.metadata,
                     m.embedding_model, dedup_key(claim.session_id, m.content),
                     provenance_sql.array_text(m.source_seqs), m.source_fallback,
                     m.sensitivity, m.status])
    return json.dumps(rows, ensure_ascii=False)


def finish_session(conn: Connection, attempt: Attempt, outcome: Outcome, *, through_seq: int,
                   memories: Sequence[MemoryRow] = (), turns: Sequence[TurnRow] = (),
                   task_id: str | None = None) -> Finished | None:
    """Stamp the session, write its memories (a re-run's rows already written are skipped by
    dedup_key; the session's and the run row's count is the rows written, not the
    candidates) and index its turns, in one statement; None when the claim is no longer ours
    (nothing was written). Atomic on an autocommit connection; inside a transaction, part of
    it (PgBouncer in transaction mode)."""
    claim = attempt.claim
    dim = len(memories[0].embedding) if memories else 0
    if any(len(m.embedding) != dim for m in memories):
        raise ValueError("a session's memories must have vectors of one size")
    binds = turn_params(turns)
    binds["turn_dim"] = binds.pop("dim")
    params = {
        **run_params(attempt, outcome, task_id), **binds,
        "token": claim.token, "through_seq": through_seq,
        "memories": memory_rows(attempt, memories),
        "embeddings": write_sql.Float4Array([x for m in memories for x in m.embedding]),
        "dim": dim,
    }
    row = conn.exec_driver_sql(FINISH_SQL, {_FINISH_NAMES[k]: v for k, v in params.items()
                                            if k in _FINISH_NAMES}).one()
    if not row.fenced:
        return None
    statuses: dict[str, Any] = json.loads(row.turns)
    return Finished(int(row.memories), Counter({k: int(v) for k, v in statuses.items()}))
