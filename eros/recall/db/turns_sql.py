"""The SQL of the turns recall layer (``engine.memory_turns``, 0025).

A turn's row holds its vector, never its text: every read joins ``chat_messages`` on ``seq``.
Writes are one multi-row statement (arrays ``unnest``-ed back into rows, the vectors as one
flat ``real[]`` of ``dim`` floats per turn, as :mod:`eros.memory.db.write_sql` sends a session's
memories) and idempotent: a second write of a seq replaces its vector, model, label and status.

Scope of a read: the user's turns said to the same persona (``instance_id``; NULL = the
sessions without one). A turn belongs to one conversation — reading another persona's turns
would leak one relationship into another — so unlike memories there is no profile layer.
Only ``current`` turns are read: ``quarantined`` (the guard rejected it) and ``unscreened``
ones never are.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import Connection, bindparam, text

from eros.core.statuses import CURRENT, TurnStatus
from eros.memory.core.channels import VOICE, strip_voice_tags
from eros.memory.db.write_sql import Float4Array

T = "engine.memory_turns"


@dataclass(frozen=True)
class TurnRow:
    """One turn to index: the message's ``seq`` and where it was said, its vector and label."""

    seq: int
    session_id: uuid.UUID
    user_id: uuid.UUID
    instance_id: uuid.UUID | None
    said_at: datetime
    embedding: Sequence[float]
    embedding_model: str
    sensitivity: str | None = None
    status: TurnStatus = CURRENT


@dataclass(frozen=True)
class NearTurn:
    """A recalled turn: its text read from ``chat_messages``, cosine distance to the query."""

    seq: int
    session_id: uuid.UUID
    said_at: datetime
    content: str
    distance: float
    sensitivity: str | None
    #: ``chat_messages.channel`` (a voice turn's ``content`` is read with its tags stripped)
    channel: str = "text"


#: the upsert: one statement whatever the number of rows; a seq whose message is gone (deleted
#: meanwhile) is skipped by the join rather than failing the foreign key.
UPSERT_SQL = f"""
INSERT INTO {T} (seq, session_id, user_id, instance_id, said_at, embedding,
                 embedding_model, sensitivity, status)
SELECT t.seq, t.session_id, t.user_id, t.instance_id, t.said_at,
       CAST(f.v[(t.ord - 1) * f.dim + 1 : t.ord * f.dim] AS halfvec),
       t.embedding_model, t.sensitivity, t.status
  FROM unnest(CAST(:turn_seqs AS bigint[]), CAST(:turn_sessions AS uuid[]),
              CAST(:turn_users AS uuid[]), CAST(:turn_instances AS uuid[]),
              CAST(:turn_said_at AS timestamptz[]), CAST(:turn_models AS text[]),
              CAST(:turn_sensitivities AS text[]), CAST(:turn_statuses AS text[]))
       WITH ORDINALITY AS t(seq, session_id, user_id, instance_id, said_at, embedding_model,
                            sensitivity, status, ord)
  JOIN engine.chat_messages m ON m.seq = t.seq
 CROSS JOIN (SELECT CAST(:turn_embeddings AS real[]) AS v, CAST(:dim AS integer) AS dim) f
ON CONFLICT (seq) DO UPDATE
   SET embedding = EXCLUDED.embedding, embedding_model = EXCLUDED.embedding_model,
       sensitivity = EXCLUDED.sensitivity, status = EXCLUDED.status, indexed_at = now()
"""
_UPSERT = text(f"WITH w AS ({UPSERT_SQL} RETURNING 1) SELECT count(*) FROM w")


def turn_params(rows: Sequence[TurnRow]) -> dict[str, Any]:
    """The binds of :data:`UPSERT_SQL` (``:turn_*`` and ``:dim``) for ``rows``."""
    dim = len(rows[0].embedding) if rows else 0
    flat: list[float] = []
    for r in rows:
        if len(r.embedding) != dim:
            raise ValueError("every turn vector must have the same dimension")
        flat.extend(r.embedding)
    return {
        "turn_seqs": [r.seq for r in rows],
        "turn_sessions": [r.session_id for r in rows],
        "turn_users": [r.user_id for r in rows],
        "turn_instances": [r.instance_id for r in rows],
        "turn_said_at": [r.said_at for r in rows],
        "turn_models": [r.embedding_model for r in rows],
        "turn_sensitivities": [r.sensitivity for r in rows],
        "turn_statuses": [r.status for r in rows],
        "turn_embeddings": Float4Array(flat),
        "dim": dim,
    }


def write_turns(conn: Connection, rows: Sequence[TurnRow]) -> int:
    """Index ``rows`` (insert, or replace a seq's vector, model, label and status): one
    statement. Returns the rows written (a seq whose message no longer exists is skipped)."""
    if not rows:
        return 0
    return int(conn.execute(_UPSERT, turn_params(rows)).scalar_one())


# --- reads ---------------------------------------------------------------------------------
#: the turns' model and its centre row, read once per statement (a MATERIALIZED CTE the
#: InitPlans below read): the centre (NULL: none, or the model's vectors share no direction),
#: how far its re-sketch has come (0030; NULL: every turn is centred) and whether the model has
#: a row at all. With no model given (a user on one model, whose rows recall does not filter)
#: the model is read from one of the user's turns: its seq from the user's index range (an
#: index-only read of one entry), then that row by its key. Asking the table for "a row of
#: this user" directly let the planner pick a scan of the whole heap in physical order — for a
#: user whose turns sit at its end (a new or a heavy one) every older turn was read, three
#: times a recall.
_CENTRE_CTE = """centre AS MATERIALIZED (
    SELECT c.centre, c.resketch_below, c.embedding_model IS NOT NULL AS known
      FROM (SELECT coalesce(CAST(:model AS text),
                            (SELECT u.embedding_model FROM engine.memory_turns u
                              WHERE u.seq = (SELECT x.seq FROM engine.memory_turns x
                                              WHERE x.user_id = :user_id LIMIT 1))) AS name) m
      LEFT JOIN engine.turn_sketch_centres c ON c.embedding_model = m.name)"""
#: the query's sketch against its model's centre (0029; none: the query's own signs), computed
#: once per statement (an InitPlan, as recall_sql.QUERY_SKETCH). The rows' sketches are taken
#: against the same centre by the ``memory_turns_place`` trigger.
_QUERY_SKETCH = ("(SELECT binary_quantize(CASE WHEN k.centre IS NULL THEN CAST(:q AS halfvec)"
                 " ELSE CAST(:q AS halfvec) - k.centre END) FROM centre k)")
#: the turns below this seq may still carry sketches taken without the centre (a re-sketch
#: under way, 0030): compared with the query's own signs
_BELOW = "(SELECT k.resketch_below FROM centre k)"
_PLAIN_SKETCH = "(SELECT binary_quantize(CAST(:q AS halfvec)))"
_HAMMING = (f"CASE WHEN t.seq < {_BELOW} THEN t.embedding_bq <~> {_PLAIN_SKETCH}"
            f" ELSE t.embedding_bq <~> {_QUERY_SKETCH} END")
#: the pool re-ranked exactly: ``:pool`` when the model's sketches are centred, else
#: ``:plain_pool`` (uncentred sketches rank worse: the pool must be larger for the same recall;
#: so while a re-sketch is under way)
_POOL = ("(SELECT CASE WHEN k.known AND k.resketch_below IS NULL THEN :pool"
         " ELSE :plain_pool END FROM centre k)")
#: ``{model}``: ``AND t.embedding_model = :model`` when a model is given (a user mid re-embed),
#: else nothing — a filter that may be either (``:model IS NULL OR …``) cannot be dropped from
#: a prepared statement's generic plan, and ``embedding_model`` is not in the index: every
#: pre-scanned turn was read from the heap (twice the CPU of the index-only scan)
_SCOPE = """t.user_id = :user_id AND {persona}
       AND t.status = 'current' AND (:sensitive OR t.sensitivity IS NULL) {model}"""
_PRESCAN = f"""SELECT t.seq, {_HAMMING} AS h FROM {T} t
     WHERE {_SCOPE}"""
#: a clustered user (0029): the turns of the ``:share`` of their memory cells nearest the query
#: (the cells the memory side probes) and the turns in no cell (-1), one multi-range scan of
#: ix_memory_turns_recall (``cell = ANY(...)``), read index-only.
_PROBED = f"""WITH probe AS MATERIALIZED (
    SELECT ARRAY(SELECT c.cell FROM engine.memory_cells c WHERE c.user_id = :user_id
                  ORDER BY c.centroid <=> CAST(:q AS vector)
                  LIMIT (SELECT greatest(1, ceil(count(*) * CAST(:share AS float8)))::integer
                           FROM engine.memory_cells n WHERE n.user_id = :user_id)) || -1 AS cells)
SELECT s.seq FROM ({_PRESCAN}
    AND t.cell = ANY(CAST((SELECT p.cells FROM probe p) AS integer[])) ORDER BY h LIMIT {_POOL}
) s"""

# The ``:pool`` turns nearest by Hamming distance of their sketches (an index-only range of
# ix_memory_turns_recall; a clustered user's probed cells, above), re-ranked by exact cosine of
# the half-precision vectors; only the ``:k`` kept are joined to ``chat_messages`` for their
# text (joining the whole pool read 2,000 more index entries and heap pages for a pool of
# 1,000). When the scope holds no more than ``:pool`` rows every one is re-ranked: the answer
# is exact. The persona is matched by ``=`` or ``IS NULL`` (index conditions; ``IS NOT
# DISTINCT FROM`` would filter every row of the user's range).
_NEAREST_SQL = f"""
WITH {_CENTRE_CTE}, pre AS MATERIALIZED ({{prescan}}), near AS MATERIALIZED (
    SELECT t.seq, t.session_id, t.said_at, t.sensitivity,
           t.embedding <=> CAST(:q AS halfvec) AS distance
      FROM pre JOIN {T} t ON t.seq = pre.seq
     ORDER BY distance, t.seq
     LIMIT :k
)
SELECT near.seq, near.session_id, near.said_at, m.content, m.channel, near.sensitivity,
       near.distance
  FROM near JOIN engine.chat_messages m ON m.seq = near.seq
 ORDER BY near.distance, near.seq
"""
_EVERY = f"SELECT s.seq FROM ({_PRESCAN} ORDER BY h LIMIT {_POOL}) s"
_NEAREST = {(persona, probed, by_model): text(_NEAREST_SQL.replace(
                "{prescan}", _PROBED if probed else _EVERY).replace("{persona}", cond)
                .replace("{model}", "AND t.embedding_model = :model" if by_model else ""))
            .bindparams(bindparam("q", type_=Vector()))
            for persona, cond in ((True, "t.instance_id = :instance_id"),
                                  (False, "t.instance_id IS NULL"))
            for probed in (True, False) for by_model in (True, False)}
#: the pool a query re-ranks by exact cosine: this many times ``k``, at least ``MIN_POOL`` —
#: with centred sketches (0029) 6×k keeps more of the exact top 50 than 20×k of uncentred ones
#: (bench/RESULTS.md); a model with no centre yet keeps the uncentred pool.
POOL_PER_K, MIN_POOL = 6, 300
PLAIN_POOL_PER_K, PLAIN_MIN_POOL = 20, 400


def nearest_sql(persona: bool, probed: bool, by_model: bool = False) -> str:
    """The statement :func:`nearest_turns` runs (exposed so tests and benches can EXPLAIN it)."""
    return str(_NEAREST[(persona, probed, by_model)])


def nearest_turns(conn: Connection, user_id: uuid.UUID, instance_id: uuid.UUID | None,
                  query_vector: Sequence[float], k: int, include_sensitive: bool, *,
                  pool: int | None = None, embedding_model: str | None = None,
                  probe_share: float = 1.0) -> list[NearTurn]:
    """The ``k`` current turns of the user's conversations with ``instance_id`` nearest
    ``query_vector`` (cosine distance, nearest first), with their text from ``chat_messages``
    (a voice turn's stage directions stripped, as extraction reads it).
    ``include_sensitive=False`` leaves labelled turns out; ``embedding_model`` set: only turns
    embedded by that model (never rank two models' vectors together), sketched against its
    centre. ``pool`` (default ``max(POOL_PER_K·k, MIN_POOL)``, or ``max(PLAIN_POOL_PER_K·k,
    PLAIN_MIN_POOL)`` while the model has no centre) is how many sketch-nearest turns are
    re-ranked exactly. ``probe_share`` below 1: a clustered user's turns are read from the
    ``probe_share`` of their memory cells nearest the query (and the turns in no cell); a probe
    that finds fewer than ``k`` turns is re-run over all of them (a persona whose turns fall in
    few cells still gets the ``k`` that exist)."""
    if k <= 0:
        return []
    n = pool if pool is not None else max(POOL_PER_K * k, MIN_POOL)
    plain = pool if pool is not None else max(PLAIN_POOL_PER_K * k, PLAIN_MIN_POOL)
    params = {"user_id": user_id, "instance_id": instance_id, "q": list(query_vector),
              "sensitive": include_sensitive, "pool": max(n, k), "plain_pool": max(plain, k),
              "k": k,
              "model": embedding_model, "share": probe_share}
    persona, by_model = instance_id is not None, embedding_model is not None
    rows = conn.execute(_NEAREST[(persona, probe_share < 1, by_model)], params).all()
    if probe_share < 1 and len(rows) < k:
        rows = conn.execute(_NEAREST[(persona, False, by_model)], params).all()
    return [NearTurn(seq=int(r.seq), session_id=r.session_id, said_at=r.said_at,
                     content=strip_voice_tags(r.content) if r.channel == VOICE else r.content,
                     distance=float(r.distance), sensitivity=r.sensitivity, channel=r.channel)
            for r in rows]


def count_turns(conn: Connection, user_id: uuid.UUID | None = None) -> int:
    """Indexed turns (all statuses), of one user or of everyone."""
    if user_id is None:
        return int(conn.execute(text(f"SELECT count(*) FROM {T}")).scalar_one())
    return int(conn.execute(text(f"SELECT count(*) FROM {T} WHERE user_id = :u"),
                            {"u": user_id}).scalar_one())


# --- erasure --------------------------------------------------------------------------------
def _deleted(conn: Connection, where: str, params: dict[str, Any]) -> int:
    return int(conn.execute(text(
        f"WITH d AS (DELETE FROM {T} WHERE {where} RETURNING 1) SELECT count(*) FROM d"),
        params).scalar_one())


def delete_turns_for_user(conn: Connection, user_id: uuid.UUID, *,
                          instance_id: uuid.UUID | None = None) -> int:
    """Every turn vector of the user, or of the user's conversations with one persona."""
    if instance_id is None:
        return _deleted(conn, "user_id = :u", {"u": user_id})
    return _deleted(conn, "user_id = :u AND instance_id = :i", {"u": user_id, "i": instance_id})


def delete_turns_for_session(conn: Connection, session_id: uuid.UUID) -> int:
    return _deleted(conn, "session_id = :s", {"s": session_id})


def delete_turns_for_seqs(conn: Connection, seqs: Sequence[int]) -> int:
    """The vectors of these messages (a forgotten memory's source turns, a message erasure)."""
    if not seqs:
        return 0
    return _deleted(conn, "seq = ANY(CAST(:seqs AS bigint[]))", {"seqs": list(seqs)})


def delete_turns_labelled(conn: Connection, user_id: uuid.UUID, label: str | None) -> int:
    """The user's turns with special-category ``label`` (None: with any label)."""
    if label is None:
        return _deleted(conn, "user_id = :u AND sensitivity IS NOT NULL", {"u": user_id})
    return _deleted(conn, "user_id = :u AND sensitivity = :l", {"u": user_id, "l": label})


def delete_turns_for_user_seqs(conn: Connection, user_id: uuid.UUID,
                               seqs: Sequence[int]) -> int:
    """The vectors of these turns of ``user_id`` (another user's seq is left alone)."""
    if not seqs:
        return 0
    return _deleted(conn, "user_id = :u AND seq = ANY(CAST(:seqs AS bigint[]))",
                    {"u": user_id, "seqs": list(seqs)})

