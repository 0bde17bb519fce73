"""Cells and centred sketches for the turns recall layer: a cheaper turn search.

A heavy user's turn search read every one of their sketches (20,000 for the benchmark's heavy
user) and re-ranked the 1,000 nearest by exact cosine. Two changes cut it:

- ``memory_turns.cell``: the turn's nearest cell among its user's *memory* cells
  (``memory_cells``, 0008) — the same IVF partition the memory side probes, so a recall reads
  the turns of the cells it probes (and the turns in no cell) instead of all of them. Set by a
  trigger when a turn is written and its user has cells, and for all of a user's turns when
  the user is clustered (:func:`eros.recall.db.cells_sql.replace_cells`); -1 (in no cell: always read)
  when the user has none. ``ix_memory_turns_recall`` gains it as its last key column. Not NULL:
  a btree range ``instance_id IS NULL AND cell IS NULL`` is not an index search (it read the
  user's whole range), ``cell = ANY(probed cells || -1)`` is one multi-range scan.
- ``embedding_bq`` is no longer generated from ``binary_quantize(embedding)`` but set by the
  same trigger against a stored centre per embedding model (``turn_sketch_centres``): the sign
  of ``embedding − centre``. An embedder whose vectors share one direction (multilingual-e5
  turns: the mean has norm 0.92) makes most sign bits equal on every turn; centred, the sketch
  ranks well enough that the exact re-rank reads a third of the rows it did. A model with no
  centre row is sketched as before. Existing sketches are left as they were (no centre yet);
  the cells pass (``eros.cluster_memories``) sets a model's centre and re-sketches its turns
  (a model whose vectors share no direction gets a row with no centre: its sketches are fine as
  they are). A model with a row gets the smaller pool (:mod:`eros.recall.db.turns_sql`).

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-06
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import HALFVEC
from sqlalchemy.dialects.postgresql import BIT

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def _dim() -> int:
    """This run's vector size (EMBEDDING_DIM), handed over by env.py: not read here."""
    return int(op.get_context().opts["embedding_dim"])

S = "engine"

_PLACE = f"""
CREATE FUNCTION {S}.memory_turns_place() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c halfvec;
BEGIN
    SELECT x.centre INTO c FROM {S}.turn_sketch_centres x
     WHERE x.embedding_model = NEW.embedding_model;
    NEW.embedding_bq := binary_quantize(CASE WHEN c IS NULL THEN NEW.embedding
                                             ELSE NEW.embedding - c END);
    NEW.cell := coalesce({S}.nearest_memory_cell(NEW.user_id, CAST(NEW.embedding AS vector)),
                         -1);
    RETURN NEW;
END $$;

CREATE TRIGGER memory_turns_place BEFORE INSERT OR UPDATE OF embedding, embedding_model, user_id
    ON {S}.memory_turns FOR EACH ROW EXECUTE FUNCTION {S}.memory_turns_place();
"""


def upgrade() -> None:
    op.create_table(
        "turn_sketch_centres",
        sa.Column("embedding_model", sa.Text, primary_key=True),
        sa.Column("centre", HALFVEC(_dim()), nullable=True),
        sa.Column("turns", sa.BigInteger, nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        schema=S,
    )
    # -1: in no cell (a default, not a rewrite of the table)
    op.add_column("memory_turns", sa.Column("cell", sa.Integer, nullable=False,
                                            server_default=sa.text("-1")), schema=S)
    op.execute(f"ALTER TABLE {S}.memory_turns ALTER COLUMN embedding_bq DROP EXPRESSION")
    op.execute(_PLACE)
    op.drop_index("ix_memory_turns_recall", table_name="memory_turns", schema=S)
    # the turns of users clustered already: their nearest cell (the trigger places new ones)
    op.execute(f"UPDATE {S}.memory_turns t"
               f" SET cell = coalesce({S}.nearest_memory_cell(t.user_id,"
               " CAST(t.embedding AS vector)), -1)"
               f" WHERE t.user_id IN (SELECT DISTINCT c.user_id FROM {S}.memory_cells c)")
    op.create_index("ix_memory_turns_recall", "memory_turns",
                    ["user_id", "instance_id", "status", "cell"], schema=S,
                    postgresql_include=["seq", "sensitivity", "embedding_bq"])


def downgrade() -> None:
    op.drop_index("ix_memory_turns_recall", table_name="memory_turns", schema=S)
    op.execute(f"DROP TRIGGER memory_turns_place ON {S}.memory_turns")
    op.execute(f"DROP FUNCTION {S}.memory_turns_place()")
    op.drop_column("memory_turns", "cell", schema=S)
    # the generated sketch again (uncentred): dropped and recomputed
    op.drop_column("memory_turns", "embedding_bq", schema=S)
    op.add_column("memory_turns", sa.Column("embedding_bq", BIT(_dim()), sa.Computed(
        f"(binary_quantize(embedding))::bit({_dim()})",
                                    persisted=True)), schema=S)
    op.create_index("ix_memory_turns_recall", "memory_turns",
                    ["user_id", "instance_id", "status"], schema=S,
                    postgresql_include=["seq", "sensitivity", "embedding_bq"])
    op.drop_table("turn_sketch_centres", schema=S)
