"""Sketch centres for the turns (0029, issue 31's cost): set once per embedding model.

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
RECALL_CELL_INTERVAL_SECS) and by ``eros recall cluster``; a centre, once set, is kept (a model's
mean direction is a property of the model, not of whose turns were read).
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine

from eros.db import turn_cells_sql

log = logging.getLogger("eros.cells")

#: a model's centre is the mean of this many of its newest turns …
SAMPLE = 20_000
#: … set once it has this many in that sample (the mean of fewer moves with each session) …
MIN_TURNS = 1_000
#: … and only if their mean is this long (unit vectors: 0 = no shared direction, 1 = one).
MIN_MEAN_NORM = 0.2


def ensure_centres(engine: Engine) -> dict[str, int]:
    """Set the centre of every model with turns enough and none yet, and re-sketch its turns
    (a model whose vectors share no direction: a row with no centre), one transaction per
    model; returns the turns re-sketched per model judged now (0: no centre needed)."""
    with engine.connect() as conn:
        models = turn_cells_sql.uncentred_models(conn, SAMPLE)
    done: dict[str, int] = {}
    for m in models:
        if m.turns < MIN_TURNS:
            continue
        with engine.begin() as conn:
            done[m.model] = turn_cells_sql.set_centre(conn, m.model, SAMPLE,
                                                      centred=m.mean_norm >= MIN_MEAN_NORM)
        log.info("turn sketches of model %s: mean norm %.2f, %s; %d turns re-sketched",
                 m.model, m.mean_norm, "centred" if m.mean_norm >= MIN_MEAN_NORM else
                 "no centre needed", done[m.model])
    return done
