"""Consolidation: memory status and lineage, merge/supersede history, per-user pass state.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.add_column("companion_memories", sa.Column("status", sa.Text, nullable=False,
                  server_default=sa.text("'current'")), schema=S)
    op.add_column("companion_memories", sa.Column(
        "replaced_by", UUID(as_uuid=True),
        sa.ForeignKey(f"{S}.companion_memories.id", ondelete="SET NULL"), nullable=True),
        schema=S)
    op.add_column("companion_memories", sa.Column("replaced_at", sa.DateTime(timezone=True),
                  nullable=True), schema=S)
    op.create_check_constraint("ck_companion_memories_status", "companion_memories",
                               "status IN ('current', 'merged', 'superseded')", schema=S)
    op.create_index("ix_companion_memories_current", "companion_memories",
                    ["user_id", "created_at"], schema=S,
                    postgresql_where=sa.text("status = 'current'"))
    op.create_table(
        "memory_history",
        sa.Column("id", sa.BigInteger, sa.Identity(always=False), primary_key=True),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("result_id", UUID(as_uuid=True),
                  sa.ForeignKey(f"{S}.companion_memories.id", ondelete="SET NULL"),
                  nullable=True),
        sa.Column("source_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
        sa.Column("model", sa.Text),
        sa.Column("details", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.CheckConstraint("action IN ('merge', 'supersede')", name="ck_memory_history_action"),
        schema=S,
    )
    op.create_index("ix_memory_history_user", "memory_history", ["user_id", "created_at"],
                    schema=S)
    op.create_index("ix_memory_history_result", "memory_history", ["result_id"], schema=S)
    op.create_table(
        "consolidation_state",
        sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("seen_until", sa.DateTime(timezone=True)),
        sa.Column("last_run_at", sa.DateTime(timezone=True)),
        sa.Column("claimed_at", sa.DateTime(timezone=True)),
        sa.Column("attempts", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("near_dup_share_before", sa.Float),
        sa.Column("near_dup_share_after", sa.Float),
        sa.Column("merged_total", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("superseded_total", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("last_outcome", sa.Text),
        sa.Column("last_error", sa.Text),
        schema=S,
    )


def downgrade() -> None:
    op.drop_table("consolidation_state", schema=S)
    op.drop_table("memory_history", schema=S)
    op.drop_index("ix_companion_memories_current", table_name="companion_memories", schema=S)
    op.drop_constraint("ck_companion_memories_status", "companion_memories", schema=S)
    op.drop_column("companion_memories", "replaced_at", schema=S)
    op.drop_column("companion_memories", "replaced_by", schema=S)
    op.drop_column("companion_memories", "status", schema=S)
