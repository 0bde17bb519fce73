"""Recall: a partial index for per-user, per-layer, per-category recall; vectors stored inline.

``ix_companion_memories_recall`` (user, instance, category) over current rows serves the
capped counts that choose between an exact scan and HNSW, and the exact scans themselves
(profile = ``instance_id IS NULL``, relationship = ``instance_id = :i``, per category).

``STORAGE MAIN`` keeps a vector in the heap row instead of TOAST: a 512-d vector (2 KB) pushes a
row just over the TOAST threshold, so with pgvector's default (EXTERNAL) every exact-scan row
costs a TOAST index lookup and more buffer reads: measured 2-2.5x slower on 1 M rows (an exact
scan of a 10,000-memory user: 70 ms with TOAST, 26-32 ms inline).
MAIN still moves a vector out of line when the row would not fit a page (EMBEDDING_DIM > ~2000),
so no size stops working. It changes the catalog only: rows already written stay in TOAST until
rewritten (VACUUM FULL, pg_repack, CLUSTER); new rows are inline.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.create_index("ix_companion_memories_recall", "companion_memories",
                    ["user_id", "instance_id", "category"], schema=S,
                    postgresql_where=sa.text("status = 'current'"))
    op.execute(f"ALTER TABLE {S}.companion_memories ALTER COLUMN embedding SET STORAGE MAIN")


def downgrade() -> None:
    op.execute(f"ALTER TABLE {S}.companion_memories ALTER COLUMN embedding SET STORAGE EXTERNAL")
    op.drop_index("ix_companion_memories_recall", table_name="companion_memories", schema=S)
