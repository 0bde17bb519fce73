"""The sketch mirror's insert trigger places a statement's new memories in their cells in the
statement itself.

0008/0015's statement trigger called ``nearest_memory_cell`` once per inserted row: a SQL
function run per row (its own executor start and snapshot, a top-1 sort of the user's
centroids, a ``FOR SHARE`` lock taken row by row). A consolidation pass inserts ~50 canonical
rows in one statement, and the probes were ~4.6 of the INSERT's ~10.4 ms of server CPU (issue
34 item 3: a 50k user's 224 cells, 52 rows). Now the trigger's one statement finds each new
row's nearest centroid by a ``LATERAL`` top-1 (the same ``centroid <=> embedding`` ordering as
the function; an exact tie goes to the lower cell) and locks each cell chosen ``FOR SHARE`` once,
before the mirror rows are written: ~0.9 ms of server CPU less for those 52 rows (measured
10.42 → 9.48 ms, median of 40). A re-clustering's DELETE of the user's cells still waits for
the writer and then re-assigns its rows; a cell deleted before the lock leaves the row
``NULL`` (always scanned), as before.

Nothing else changes: ``nearest_memory_cell`` stays (the update trigger, re-clustering and the
turns use it), and so do the mirror's rows and columns.

Self-contained: no import of the live schema code and no environment read.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-07
"""
from __future__ import annotations

from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

S = "engine"

_SETWISE = f"""
CREATE OR REPLACE FUNCTION {S}.memory_sketches_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH near AS (
        SELECT n.id, c.user_id, c.cell
          FROM new_rows n
         CROSS JOIN LATERAL (
               SELECT c.user_id, c.cell FROM {S}.memory_cells c
                WHERE c.user_id = n.user_id AND n.embedding IS NOT NULL
                ORDER BY c.centroid <=> n.embedding, c.cell LIMIT 1) c
    ), held AS (
        SELECT c.user_id, c.cell FROM {S}.memory_cells c
         WHERE (c.user_id, c.cell) IN (SELECT near.user_id, near.cell FROM near)
           FOR SHARE OF c
    )
    INSERT INTO {S}.memory_sketches (memory_id, user_id, instance_id, status, cell, sketch,
                                     category)
    SELECT n.id, n.user_id, n.instance_id, n.status, h.cell, n.embedding_bq, n.category
      FROM new_rows n
      LEFT JOIN near ON near.id = n.id
      LEFT JOIN held h ON h.user_id = near.user_id AND h.cell = near.cell;
    RETURN NULL;
END $$;
"""

_PER_ROW = f"""
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


def upgrade() -> None:
    op.execute(_SETWISE)


def downgrade() -> None:
    op.execute(_PER_ROW)
