"""Meaning-based memory guard: quarantine and the classifier cache.

- ``companion_memories.status`` may be ``quarantined``: ``eros rescreen`` moves a stored
  memory the current guard would drop there (never recalled: recall reads ``current`` only;
  ``eros rescreen --restore ID`` brings it back). The check constraint is replaced, which
  validates every row once (a scan, no rewrite).
- ``guard_classifiers``: the meaning classifier trained at first use per (embedding model,
  exemplar bank hash), so workers do not each embed the bank and train again.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.drop_constraint("ck_companion_memories_status", "companion_memories", schema=S)
    op.create_check_constraint(
        "ck_companion_memories_status", "companion_memories",
        "status IN ('current', 'merged', 'superseded', 'quarantined')", schema=S)
    op.create_table(
        "guard_classifiers",
        sa.Column("embedding_model", sa.Text, primary_key=True),
        sa.Column("bank_hash", sa.Text, primary_key=True),
        sa.Column("weights", postgresql.ARRAY(sa.Float), nullable=False),
        sa.Column("bias", sa.Float, nullable=False),
        sa.Column("mean", postgresql.ARRAY(sa.Float), nullable=False),
        sa.Column("scale", postgresql.ARRAY(sa.Float), nullable=False),
        sa.Column("threshold", sa.Float, nullable=False),
        sa.Column("balanced_accuracy", sa.Float, nullable=False),
        sa.Column("trained_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        schema=S)


def downgrade() -> None:
    op.drop_table("guard_classifiers", schema=S)
    # a quarantined memory must not come back into recall: it leaves as superseded
    op.execute(f"UPDATE {S}.companion_memories SET status = 'superseded',"
               " replaced_at = coalesce(replaced_at, now()) WHERE status = 'quarantined'")
    op.drop_constraint("ck_companion_memories_status", "companion_memories", schema=S)
    op.create_check_constraint(
        "ck_companion_memories_status", "companion_memories",
        "status IN ('current', 'merged', 'superseded')", schema=S)
