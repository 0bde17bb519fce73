"""Consolidation, second part: which memories a pass has already judged.

``consolidation_seen_at`` is stamped on the members of every cluster a consolidation pass asked
the model about (and on the canonical rows it writes). It lets a pass send the model only the
clusters that contain something new — a cluster the model already judged "separate" is not
paid for again on every pass — and it is exact under concurrency, unlike a ``created_at``
watermark (a classify transaction that commits late can carry a ``created_at`` older than
memories a pass has already read). Only clustered memories are stamped: every stamp rewrites a
row with its vector and adds an HNSW entry, so stamping all memories would double the write
volume of the table for no benefit.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.add_column("companion_memories", sa.Column(
        "consolidation_seen_at", sa.DateTime(timezone=True), nullable=True), schema=S)


def downgrade() -> None:
    op.drop_column("companion_memories", "consolidation_seen_at", schema=S)
