"""Memory poisoning guard: count what the guard dropped on each outcome.

``chat_sessions.guard_dropped`` is the number of candidates the memory guard dropped in the
session's last extraction (next to ``memory_count``), ``classification_runs.guard_dropped`` the
same per attempt: a rising count is the signal that someone is trying to plant instructions,
visible in SQL without any memory text being kept. Both are plain integer columns with a
constant default, so adding them rewrites no rows.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("chat_sessions", "classification_runs"):
        op.add_column(table, sa.Column("guard_dropped", sa.Integer(), nullable=False,
                                       server_default=sa.text("0")), schema="engine")


def downgrade() -> None:
    for table in ("classification_runs", "chat_sessions"):
        op.drop_column(table, "guard_dropped", schema="engine")
