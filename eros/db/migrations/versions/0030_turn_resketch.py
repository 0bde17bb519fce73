"""Turn sketches re-centred in short batches, and no turn sketched against a stale view.

0029 set a model's sketch centre and re-sketched every turn of the model in the same
transaction: one UPDATE of every turn (millions on an upgraded deployment), holding each row's
lock until the end — an erasure of a user's turns waited for all of it. And a turn written
while that transaction ran kept its uncentred sketch: its writer's trigger read "no centre"
before the centre committed, and the UPDATE's snapshot did not see the uncommitted row, so the
turn was ranked against the wrong sketch for good.

- ``turn_sketch_centres.resketch_below``: while not NULL, the model's turns below this seq may
  still carry sketches taken without the centre; the recall's turn search compares those with
  the query's uncentred sketch (and reads the larger pool) until the re-sketch, in batches from
  the top down, has passed them. NULL: every turn of the model is sketched against the centre.
- ``memory_turns_place`` takes a shared advisory lock on the model before it reads the centre;
  setting a centre takes it exclusively, so it waits for every turn writer that read "no
  centre" to commit (their turns then fall below the watermark and are re-sketched), and a
  writer that comes later waits and sees the centre.

Self-contained: no import of the live schema code and no environment read.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-06
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

S = "engine"

#: the advisory lock of a model's centre (eros/recall/db/turn_cells_sql.py takes it exclusively)
_LOCK = "hashtextextended('eros.turn_centre:' || NEW.embedding_model, 0)"


def _place(lock: bool) -> str:
    take = f"    PERFORM pg_advisory_xact_lock_shared({_LOCK});\n" if lock else ""
    return f"""
CREATE OR REPLACE FUNCTION {S}.memory_turns_place() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c halfvec;
BEGIN
{take}    SELECT x.centre INTO c FROM {S}.turn_sketch_centres x
     WHERE x.embedding_model = NEW.embedding_model;
    NEW.embedding_bq := binary_quantize(CASE WHEN c IS NULL THEN NEW.embedding
                                             ELSE NEW.embedding - c END);
    NEW.cell := coalesce({S}.nearest_memory_cell(NEW.user_id, CAST(NEW.embedding AS vector)),
                         -1);
    RETURN NEW;
END $$;
"""


def upgrade() -> None:
    op.add_column("turn_sketch_centres", sa.Column("resketch_below", sa.BigInteger,
                                                   nullable=True), schema=S)
    op.execute(_place(lock=True))


def downgrade() -> None:
    op.execute(_place(lock=False))
    op.drop_column("turn_sketch_centres", "resketch_below", schema=S)
