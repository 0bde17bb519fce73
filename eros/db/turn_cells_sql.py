"""The SQL of the turns' cells and sketch centres (0029, issue 31's cost).

A turn's ``cell`` is its nearest cell among its user's *memory* cells (``memory_cells``): the
``memory_turns_place`` trigger sets it when a turn is written, :func:`place_user_turns` when the
user is clustered, :func:`uncell_user_turns` clears it (-1) when the user's cells are dropped (a
turn in no cell is always read, so clearing is always safe; a stale cell number would hide it).

A model's sketch centre (``turn_sketch_centres``) is set once, from the mean of a sample of its
turn vectors, and every turn of the model is re-sketched against it in the same transaction
(the trigger recomputes the sketch when ``embedding`` is written), so a query's sketch and the
rows' are always taken against the same centre.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, text

from eros.db.turns_sql import T

_CENTRES = "engine.turn_sketch_centres"

# The nearest cell of each of the user's turns, one set-based statement (the trigger's function
# takes a share lock per call; here the caller holds the user's cells lock). Rows whose cell
# does not change are not rewritten.
_PLACE = text(f"""
UPDATE {T} t SET cell = coalesce(n.cell, -1)
  FROM (SELECT x.seq, (SELECT c.cell FROM engine.memory_cells c WHERE c.user_id = :u
                        ORDER BY c.centroid <=> CAST(x.embedding AS vector) LIMIT 1) AS cell
          FROM {T} x WHERE x.user_id = :u) n
 WHERE t.seq = n.seq AND t.cell <> coalesce(n.cell, -1)
""")
_UNCELL = text(f"UPDATE {T} SET cell = -1 WHERE user_id = :u AND cell <> -1")


def place_user_turns(conn: Connection, user_id: uuid.UUID) -> int:
    """Put every turn of the user in its nearest cell of the user's (new) memory cells, in the
    transaction that wrote them; returns the turns moved."""
    return conn.execute(_PLACE, {"u": user_id}).rowcount


def uncell_user_turns(conn: Connection, user_id: uuid.UUID) -> int:
    """The user's cells are gone: every turn of theirs is read again (``cell`` -1)."""
    return conn.execute(_UNCELL, {"u": user_id}).rowcount


@dataclass(frozen=True)
class ModelTurns:
    """A model with no sketch centre yet: its turns in the sample read, and the norm of their
    mean (near 1: the vectors share one direction; near 0: they do not)."""

    model: str
    turns: int
    mean_norm: float


def uncentred_models(conn: Connection, sample: int) -> list[ModelTurns]:
    """The models among the newest ``sample`` indexed turns that have no centre, with their
    turns there and the norm of those turns' mean (a bounded read: the primary key backwards,
    however many turns are indexed)."""
    rows = conn.execute(text(f"""
        SELECT s.embedding_model AS model, count(*) AS turns,
               vector_norm(avg(CAST(s.embedding AS vector))) AS mean_norm
          FROM (SELECT t.embedding_model, t.embedding FROM {T} t ORDER BY t.seq DESC
                 LIMIT :sample) s
         WHERE NOT EXISTS (SELECT 1 FROM {_CENTRES} c WHERE c.embedding_model = s.embedding_model)
         GROUP BY s.embedding_model ORDER BY s.embedding_model"""), {"sample": sample}).all()
    return [ModelTurns(r.model, int(r.turns), float(r.mean_norm or 0.0)) for r in rows]


def set_centre(conn: Connection, model: str, sample: int, *, centred: bool = True) -> int:
    """Store ``model``'s centre (the mean of ``sample`` of its turn vectors) and re-sketch every
    turn of the model against it; returns the turns re-sketched (0: another pass set it).
    ``centred=False``: a row with no centre (the model's sketches are good as they are), no
    turn rewritten."""
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended('eros.turn_centre:' || :m,"
                      " 0))"), {"m": model})
    made = conn.execute(text(f"""
        INSERT INTO {_CENTRES} (embedding_model, centre, turns)
        SELECT :m, CASE WHEN :centred THEN CAST(avg(CAST(s.embedding AS vector)) AS halfvec)
                   END, count(*)
          FROM (SELECT t.embedding FROM {T} t WHERE t.embedding_model = :m
                 ORDER BY t.seq DESC LIMIT :sample) s
        HAVING count(*) > 0
        ON CONFLICT (embedding_model) DO NOTHING"""),
        {"m": model, "sample": sample, "centred": centred}).rowcount
    if not made or not centred:
        return 0
    return conn.execute(text(f"UPDATE {T} SET embedding = embedding WHERE embedding_model = :m"),
                        {"m": model}).rowcount


def drop_centres(conn: Connection) -> None:
    """Forget every centre (the vectors changed size: ``eros reembed --dim``)."""
    conn.execute(text(f"DELETE FROM {_CENTRES}"))
