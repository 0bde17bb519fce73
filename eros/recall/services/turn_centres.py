"""Sketch centres for the turns (0029, to cut the turn search's cost): set once per embedding model.

Why: a turn's sketch is one sign bit per dimension, and the turn search keeps the turns whose
sketches are nearest the query's before ranking them exactly. When a model's vectors share a
direction — multilingual-e5's turns have a mean of norm 0.92 — most bits are the same on every
turn and the sketch ranks poorly (on LoCoMo's turns a pool of 200 kept 56.5% of the exact top
50). Taken against the model's mean (the sign of ``v − centre``) the bits split the turns again
(95.6% at 200), so the exact re-rank can read far fewer rows. A model whose vectors do not share
a direction (mean norm below :data:`MIN_MEAN_NORM`) gains nothing: it gets a row with no centre
(its sketches already split its turns), since setting a centre rewrites every turn of the model.
Either row lets the turn search re-rank the smaller pool (``turns_sql.POOL_PER_K``).

Run by the recall-cells finder (``eros.cluster_memories`` without a user, every
RECALL_CELL_INTERVAL_SECS; at most :data:`FINDER_SECONDS` of re-sketching a run, the rest the
next run) and by ``eros recall cluster`` (to the end); a centre, once set, is kept (a model's
mean direction is a property of the model, not of whose turns were read). The re-sketch runs
in transactions of :data:`BATCH` turns (0030): an upgraded deployment's millions of turns are
never rewritten in one transaction, and an erasure waits at most for one batch.
"""

from __future__ import annotations

import logging
import time

from sqlalchemy import Engine

from eros.recall.db import turn_cells_sql

log = logging.getLogger("eros.cells")

#: a model's centre is the mean of this many of its newest turns …
SAMPLE = 20_000
#: … set once it has this many in that sample (the mean of fewer moves with each session) …
MIN_TURNS = 1_000
#: … and only if their mean is this long (unit vectors: 0 = no shared direction, 1 = one).
MIN_MEAN_NORM = 0.2
#: turns re-sketched per transaction
BATCH = 5_000
#: the cells finder's budget of re-sketching per run (seconds); the rest waits for its next run
FINDER_SECONDS = 60.0


def ensure_centres(engine: Engine, *, max_seconds: float | None = None) -> dict[str, int]:
    """Set the centre of every model with turns enough and none yet (a model whose vectors
    share no direction: a row with no centre), then re-sketch the turns of every model not
    yet done, :data:`BATCH` a transaction, until done or ``max_seconds`` have passed; returns
    the turns re-sketched per model judged or re-sketched now (0: no centre needed)."""
    with engine.connect() as conn:
        models = turn_cells_sql.uncentred_models(conn, SAMPLE)
    done: dict[str, int] = {}
    for m in models:
        if m.turns < MIN_TURNS:
            continue
        centred = m.mean_norm >= MIN_MEAN_NORM
        with engine.begin() as conn:
            turn_cells_sql.set_centre(conn, m.model, SAMPLE, centred=centred)
        done[m.model] = 0
        log.info("turn sketches of model %s: mean norm %.2f, %s", m.model, m.mean_norm,
                 "centred" if centred else "no centre needed")
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    with engine.connect() as conn:
        pending = turn_cells_sql.resketching_models(conn)
    for model in pending:
        n, left = resketch(engine, model, deadline)
        done[model] = done.get(model, 0) + n
        log.info("turn sketches of model %s: %d turns re-sketched against its centre, %s",
                 model, n, "more left for the next run" if left else "all done")
    return done


def resketch(engine: Engine, model: str, deadline: float | None = None) -> tuple[int, bool]:
    """Re-sketch the model's turns against its centre, :data:`BATCH` a transaction, until
    none is left or ``time.monotonic()`` passes ``deadline``; (turns re-sketched, any left)."""
    total, left = 0, True
    while left and (deadline is None or time.monotonic() < deadline):
        with engine.begin() as conn:
            n, left = turn_cells_sql.resketch_batch(conn, model, BATCH)
        total += n
    return total, left
