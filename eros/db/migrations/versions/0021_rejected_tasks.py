"""The task dead letter: ``engine.rejected_tasks``, one row per message refused for
its arguments (eros/tasks/args.py) — ``task_name``, ``task_id`` (the message id), ``error``
(argument names and fixed phrases, never a value), ``rejected_at``. A new, empty table.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.create_table(
        "rejected_tasks",
        sa.Column("id", sa.BigInteger, sa.Identity(always=False), primary_key=True),
        sa.Column("task_name", sa.Text, nullable=False),
        sa.Column("task_id", sa.Text, nullable=True),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("rejected_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        schema=S,
    )
    op.create_index("ix_rejected_tasks_rejected_at", "rejected_tasks", ["rejected_at"],
                    schema=S)


def downgrade() -> None:
    op.drop_table("rejected_tasks", schema=S)
