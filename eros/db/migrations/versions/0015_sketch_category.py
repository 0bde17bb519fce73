"""Recall cells know each memory's category (grouped recall's tail).

Grouped recall takes the top K of every category. When the pool of rows nearest the query
holds fewer than K of a category (a category far from the query), it searched that category's
whole range for the user — linear in the category's rows, and the slowest 3 % of a heavy
user's recalls. With ``memory_sketches.category`` and ``ix_memory_sketches_category`` keyed by
(user, layer, category, status, cell), the completion walks the user's cells nearest-first
and stops after a bounded number of the category's rows (``cells_sql.probed_grouped``).

The category of a memory never changes (consolidation writes new rows), so only the insert
trigger copies it; the update trigger is unchanged. The backfill rewrites the mirror once
(about 30 s per million memories); writes to ``companion_memories`` wait for the migration,
as in 0008.

Revision ID: 0015
Revises: 0013
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0013"
branch_labels = None
depends_on = None

S = "engine"

_INSERT_TRIGGER = f"""
CREATE OR REPLACE FUNCTION {S}.memory_sketches_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {S}.memory_sketches (memory_id, user_id, instance_id, status, cell, sketch,
                                     category)
    SELECT n.id, n.user_id, n.instance_id, n.status,
           {S}.nearest_memory_cell(n.user_id, n.embedding), n.embedding_bq, n.category
      FROM new_rows n;
    RETURN NULL;
END $$;
"""

_OLD_INSERT_TRIGGER = f"""
CREATE OR REPLACE FUNCTION {S}.memory_sketches_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {S}.memory_sketches (memory_id, user_id, instance_id, status, cell, sketch)
    SELECT n.id, n.user_id, n.instance_id, n.status,
           {S}.nearest_memory_cell(n.user_id, n.embedding), n.embedding_bq
      FROM new_rows n;
    RETURN NULL;
END $$;
"""


def upgrade() -> None:
    # no memory may be written between the backfill and the new trigger
    op.execute(f"LOCK TABLE {S}.companion_memories IN SHARE ROW EXCLUSIVE MODE")
    op.add_column("memory_sketches", sa.Column("category", sa.Text, nullable=True), schema=S)
    op.execute(f"UPDATE {S}.memory_sketches s SET category = m.category"
               f" FROM {S}.companion_memories m WHERE m.id = s.memory_id")
    op.alter_column("memory_sketches", "category", nullable=False, schema=S)
    op.execute(_INSERT_TRIGGER)
    op.create_index("ix_memory_sketches_category", "memory_sketches",
                    ["user_id", "instance_id", "category", "status", "cell"], schema=S,
                    postgresql_include=["memory_id", "sketch"])


def downgrade() -> None:
    op.drop_index("ix_memory_sketches_category", table_name="memory_sketches", schema=S)
    op.execute(_OLD_INSERT_TRIGGER)
    op.drop_column("memory_sketches", "category", schema=S)
