"""The SQL of the turns' cells and sketch centres (0029, to cut the turn search's cost).

A turn's ``cell`` is its nearest cell among its user's *memory* cells (``memory_cells``): the
``memory_turns_place`` trigger sets it when a turn is written, :func:`place_user_turns` when the
user is clustered, :func:`uncell_user_turns` clears it (-1) when the user's cells are dropped (a
turn in no cell is always read, so clearing is always safe; a stale cell number would hide it).

A model's sketch centre (``turn_sketch_centres``) is set once, from the mean of a sample of its
turn vectors, under an exclusive advisory lock on the model that every turn writer's trigger
takes shared (0030): setting it waits for writers that read "no centre" to commit, and later
writers see it. Its turns are then re-sketched in short batches from the top down
(:func:`resketch_batch`; the trigger recomputes the sketch when ``embedding`` is written);
``resketch_below`` marks how far the batches have come, and the turn search compares the turns
below it with the query's uncentred sketch, so a query's sketch and a row's are always taken
alike.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, text

from eros.recall.db.turns_sql import T

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


#: the advisory lock of a model's centre; the turns' trigger takes it shared (0030)
_LOCK = "hashtextextended('eros.turn_centre:' || :m, 0)"


def set_centre(conn: Connection, model: str, sample: int, *, centred: bool = True) -> bool:
    """Store ``model``'s centre (the mean of ``sample`` of its turn vectors), its turns up to
    the newest one now marked for re-sketching (:func:`resketch_batch`); True when a centre
    was stored that needs it (False: another pass set it, or ``centred=False`` — a row with
    no centre, the model's sketches are good as they are). The exclusive lock waits for every
    open transaction that wrote a turn of the model, so each such turn is below the mark."""
    conn.execute(text(f"SELECT pg_advisory_xact_lock({_LOCK})"), {"m": model})
    made = conn.execute(text(f"""
        INSERT INTO {_CENTRES} (embedding_model, centre, turns, resketch_below)
        SELECT :m, CASE WHEN :centred THEN CAST(avg(CAST(s.embedding AS vector)) AS halfvec)
                   END, count(*),
               CASE WHEN :centred THEN (SELECT max(t.seq) + 1 FROM {T} t
                                         WHERE t.embedding_model = :m) END
          FROM (SELECT t.embedding FROM {T} t WHERE t.embedding_model = :m
                 ORDER BY t.seq DESC LIMIT :sample) s
        HAVING count(*) > 0
        ON CONFLICT (embedding_model) DO NOTHING"""),
        {"m": model, "sample": sample, "centred": centred}).rowcount
    return bool(made) and centred


def resketching_models(conn: Connection) -> list[str]:
    """The models whose turns are not all sketched against their centre yet."""
    return list(conn.execute(text(f"SELECT embedding_model FROM {_CENTRES}"
                                  " WHERE resketch_below IS NOT NULL ORDER BY 1")).scalars())


# The ``:n`` turns of the model just below the mark, re-sketched (the trigger recomputes the
# sketch — and the cell — when ``embedding`` is written), and the mark moved down to the lowest
# of them; fewer than ``:n`` left: the mark is cleared. The centre's row is locked first, so
# two passes never re-sketch the same batch.
_RESKETCH = text(f"""
WITH b AS MATERIALIZED (
    SELECT t.seq FROM {T} t WHERE t.embedding_model = :m AND t.seq < :below
     ORDER BY t.seq DESC LIMIT :n
), u AS (
    UPDATE {T} t SET embedding = t.embedding FROM b WHERE t.seq = b.seq RETURNING t.seq
)
UPDATE {_CENTRES} c
   SET resketch_below = CASE WHEN (SELECT count(*) FROM b) < :n THEN NULL
                             ELSE (SELECT min(b.seq) FROM b) END
 WHERE c.embedding_model = :m
RETURNING (SELECT count(*) FROM u) AS done, c.resketch_below AS below
""")


def resketch_batch(conn: Connection, model: str, batch: int) -> tuple[int, bool]:
    """Re-sketch up to ``batch`` of the model's turns below its mark, in the caller's (short)
    transaction; returns (turns re-sketched, whether any are left)."""
    below = conn.execute(text(f"SELECT resketch_below FROM {_CENTRES}"
                              " WHERE embedding_model = :m FOR UPDATE"), {"m": model}).first()
    if below is None or below.resketch_below is None:
        return 0, False
    row = conn.execute(_RESKETCH, {"m": model, "below": below.resketch_below,
                                   "n": batch}).one()
    return int(row.done), row.below is not None


def drop_centres(conn: Connection) -> None:
    """Forget every centre (the vectors changed size: ``eros reembed --dim``)."""
    conn.execute(text(f"DELETE FROM {_CENTRES}"))
