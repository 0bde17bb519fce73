"""Recall, fourth part: per-user cells, so a heavy user's recall reads a share of its sketches.

The quantised scan (0006, 0007) is linear in the user's rows: a 50,000-memory user reads
~34,000 sketches per recall (~15 ms), twice the p99 budget. An IVF-style probe reads only the
sketches in the cells nearest the query. Where a row's cell lives matters:

- a column of ``companion_memories`` would be cheap to read but ruinous to write: assigning
  the cells of a 50,000-memory user rewrites 50,000 2 KB rows and re-inserts each into the
  HNSW graph (measured: 200 s);
- so ``memory_sketches`` mirrors what a recall scan needs of every memory (user, layer,
  status, sketch) plus its ``cell``, one narrow row per memory, and ``memory_cells`` holds
  each clustered user's centroids. Re-clustering rewrites ~100-byte rows, never the memories.

Statement-level triggers keep the mirror exact in the same transaction as the write (a memory
is never without its mirror row); a new memory of a clustered user goes to its nearest cell,
whose row it locks ``FOR SHARE`` so a concurrent re-clustering (which deletes the user's cells)
either waits for it and then re-assigns it, or is waited for and leaves it ``NULL``.
``cell IS NULL`` (a user never clustered, or a row written while its user was being
clustered) is always scanned, so a missing cell costs time, never an answer. Deleting a
memory deletes its mirror row (foreign key, ``ON DELETE CASCADE``).

Cost of the upgrade: one pass over ``companion_memories`` copying a narrow row per memory and
one btree build (54 s and 379 MB for a million rows on two cores), during which writes to the
memories wait (reads do not); afterwards each memory insert or update writes one narrow row.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import BIT, UUID

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _dim() -> int:
    """This run's vector size (EMBEDDING_DIM), handed over by env.py: not read here."""
    return int(op.get_context().opts["embedding_dim"])

S = "engine"

_FUNCTIONS = f"""
CREATE FUNCTION {S}.nearest_memory_cell(p_user uuid, p_embedding vector) RETURNS integer
LANGUAGE sql VOLATILE AS $$
    SELECT c.cell FROM {S}.memory_cells c
     WHERE c.user_id = p_user AND p_embedding IS NOT NULL
     ORDER BY c.centroid <=> p_embedding LIMIT 1
       FOR SHARE
$$;

CREATE FUNCTION {S}.memory_sketches_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {S}.memory_sketches (memory_id, user_id, instance_id, status, cell, sketch)
    SELECT n.id, n.user_id, n.instance_id, n.status,
           {S}.nearest_memory_cell(n.user_id, n.embedding), n.embedding_bq
      FROM new_rows n;
    RETURN NULL;
END $$;

CREATE FUNCTION {S}.memory_sketches_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {S}.memory_sketches s
       SET user_id = n.user_id, instance_id = n.instance_id, status = n.status,
           sketch = n.embedding_bq,
           cell = CASE WHEN s.user_id = n.user_id AND s.sketch IS NOT DISTINCT FROM n.embedding_bq
                       THEN s.cell ELSE {S}.nearest_memory_cell(n.user_id, n.embedding) END
      FROM new_rows n
     WHERE s.memory_id = n.id
       AND (s.user_id, s.instance_id, s.status, s.sketch)
           IS DISTINCT FROM (n.user_id, n.instance_id, n.status, n.embedding_bq);
    RETURN NULL;
END $$;
"""

_TRIGGERS = f"""
CREATE TRIGGER companion_memories_sketch_insert AFTER INSERT ON {S}.companion_memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {S}.memory_sketches_on_insert();
CREATE TRIGGER companion_memories_sketch_update AFTER UPDATE ON {S}.companion_memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {S}.memory_sketches_on_update();
"""


def upgrade() -> None:
    # no memory may be written between the copy below and the triggers: reads go on, writes
    # wait for the migration (the lock CREATE TRIGGER would take anyway, taken first)
    op.execute(f"LOCK TABLE {S}.companion_memories IN SHARE ROW EXCLUSIVE MODE")
    op.create_table(
        "memory_cells",
        sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("cell", sa.Integer, primary_key=True),
        sa.Column("centroid", Vector(_dim()), nullable=False),
        sa.Column("size", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        schema=S)
    op.execute(f"ALTER TABLE {S}.memory_cells ALTER COLUMN centroid SET STORAGE MAIN")
    op.create_table(
        "memory_sketches",
        sa.Column("memory_id", UUID(as_uuid=True),
                  sa.ForeignKey(f"{S}.companion_memories.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        sa.Column("instance_id", UUID(as_uuid=True), nullable=True),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("cell", sa.Integer, nullable=True),
        sa.Column("sketch", BIT(_dim()), nullable=True),
        schema=S)
    op.execute(f"INSERT INTO {S}.memory_sketches (memory_id, user_id, instance_id, status,"
               f" sketch) SELECT id, user_id, instance_id, status, embedding_bq"
               f" FROM {S}.companion_memories")
    op.create_index("ix_memory_sketches_probe", "memory_sketches",
                    ["user_id", "instance_id", "status", "cell"], schema=S,
                    postgresql_include=["memory_id", "sketch"])
    op.execute(_FUNCTIONS)
    op.execute(_TRIGGERS)


def downgrade() -> None:
    op.execute(f"DROP TRIGGER companion_memories_sketch_update ON {S}.companion_memories")
    op.execute(f"DROP TRIGGER companion_memories_sketch_insert ON {S}.companion_memories")
    op.execute(f"DROP FUNCTION {S}.memory_sketches_on_update()")
    op.execute(f"DROP FUNCTION {S}.memory_sketches_on_insert()")
    op.execute(f"DROP FUNCTION {S}.nearest_memory_cell(uuid, vector)")
    op.drop_table("memory_sketches", schema=S)
    op.drop_table("memory_cells", schema=S)
