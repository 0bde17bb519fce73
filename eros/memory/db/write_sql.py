"""The memories and the attempt's row in ``classification_runs`` that end a classify attempt
(composed into one statement by :mod:`eros.dreaming.db.finish_sql`), and the run row of an
attempt that ends otherwise.

Why raw statements of a fixed shape: a session's write used to be four statements,
one of them a multi-row ``INSERT … VALUES`` that SQLAlchemy compiled afresh for every call (a
third of the write's CPU in the worker). Now it is one statement whose text never changes —
compiled once per process, prepared once per connection — and the rows travel as arrays that
``unnest`` turns back into rows.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format
from sqlalchemy import text

_FLOAT4_OID, _FLOAT4_ARRAY_OID = 700, 1021


class Float4Array(list[float]):
    """A one-dimensional ``real[]`` parameter sent in PostgreSQL's binary array format.

    A session's vectors travel as one flat array that SQL slices per memory and casts to
    ``vector`` (pgvector's ``real[]`` cast): packing 1,536 floats takes microseconds, where
    pgvector's text form (a ``repr`` per float, parsed back by the server) took about 2 ms of
    the worker's CPU per session and more of the server's. Same float4 values: both
    paths round each double to the nearest float4; NaN and infinities are refused by the
    cast as by the text form."""


# header: dimensions, has-nulls, element type, then (size, lower bound) of the dimension;
# then each element as (byte length, big-endian float4)
_HEADER = struct.Struct(">5i")
_ELEMENT = np.dtype([("size", ">i4"), ("value", ">f4")])


class _Float4ArrayDumper(Dumper):
    format = Format.BINARY
    oid = _FLOAT4_ARRAY_OID

    def dump(self, obj: Sequence[float]) -> bytes:
        # by numpy, not struct.pack(*values): a consolidation pass's ~27,000 floats took
        # ~10 ms of the worker's CPU that way. The same bytes: each double rounded to the
        # nearest float4; a value beyond float4's range becomes an infinity, which the cast
        # to vector refuses (struct refused it here)
        elements = np.empty(len(obj), dtype=_ELEMENT)
        elements["size"] = 4
        with np.errstate(over="ignore"):
            elements["value"] = obj
        return _HEADER.pack(1, 0, _FLOAT4_OID, len(obj), 1) + elements.tobytes()


# registered for this class only: nothing else psycopg adapts changes
psycopg.adapters.register_dumper(Float4Array, _Float4ArrayDumper)

_RUN_COLUMNS = """engine.classification_runs (session_id, user_id, task_id, attempt, outcome,
        memory_count, model, prompt_tokens, completion_tokens, embedding_tokens, error,
        cost_usd, guard_dropped)"""
_RUN_VALUES = """CAST(:session_id AS uuid), CAST(:user_id AS uuid), CAST(:task_id AS text),
        CAST(:attempt AS integer), CAST(:outcome AS text)"""
_RUN_REST = """CAST(:model AS text), CAST(:prompt_tokens AS integer),
        CAST(:completion_tokens AS integer), CAST(:embedding_tokens AS integer),
        CAST(:error AS text), CAST(:cost_usd AS numeric), CAST(:guard_dropped AS integer)"""

#: one attempt's row, for every ending that writes no memories.
RECORD_RUN = text(f"""
INSERT INTO {_RUN_COLUMNS}
VALUES ({_RUN_VALUES}, CAST(:memory_count AS integer), {_RUN_REST})
""")

#: the memories of one classify attempt, as one JSON array of rows (each a positional array:
#: persona, content, category, importance, metadata, embedding model, dedup key, source seqs,
#: source fallback, sensitivity, status) and the vectors as one flat real[] of ``dim`` floats
#: per memory; WITH ORDINALITY keeps the reply's order. A memory's source seqs travel as the
#: text of a bigint[] (``{3,5}``, NULL when unknown): arrays of arrays must be rectangular, a
#: memory's sources are not. One JSON text instead of eleven arrays: psycopg dumped each
#: array element by element, a third of the statement's parameter CPU (bench/RESULTS.md,
#: issue 34); ``json.dumps`` is one C call (:func:`eros.dreaming.db.finish_sql.memory_rows`).
#: ``fence`` is the CTE that says the write may happen (one row while the claim is ours):
#: no row, nothing written. Used by :mod:`eros.dreaming.db.finish_sql`.
MEMORY_CTES = f"""
candidate AS (
    SELECT CAST(m->>0 AS uuid) AS instance_id, m->>1 AS content, m->>2 AS category,
           CAST(m->>3 AS float8) AS importance, m->4 AS metadata, m->>5 AS embedding_model,
           m->>6 AS dedup_key, m->>7 AS source_seqs, CAST(m->>8 AS boolean) AS source_fallback,
           m->>9 AS sensitivity, m->>10 AS status, ord
      FROM json_array_elements(CAST(:memories AS json)) WITH ORDINALITY AS e(m, ord)
), written AS (
    INSERT INTO engine.companion_memories (session_id, user_id, instance_id, content, category,
                                           importance, metadata, embedding, model,
                                           embedding_model, dedup_key, source_seqs,
                                           source_fallback, sensitivity, status)
    SELECT CAST(:session_id AS uuid), CAST(:user_id AS uuid), c.instance_id, c.content,
           c.category, c.importance, CAST(c.metadata AS jsonb),
           CAST(f.v[(c.ord - 1) * f.dim + 1 : c.ord * f.dim] AS vector),
           CAST(:model AS text), c.embedding_model, c.dedup_key,
           CAST(c.source_seqs AS bigint[]), c.source_fallback, c.sensitivity, c.status
      FROM candidate AS c
     CROSS JOIN (SELECT CAST(:embeddings AS real[]) AS v, CAST(:dim AS integer) AS dim) AS f
     CROSS JOIN fence
     ORDER BY c.ord
    ON CONFLICT (dedup_key) DO NOTHING
    RETURNING 1
), counted AS (
    SELECT count(*)::integer AS n FROM written
), run AS (
    INSERT INTO {_RUN_COLUMNS}
    SELECT {_RUN_VALUES}, counted.n, {_RUN_REST} FROM counted CROSS JOIN fence
)"""
