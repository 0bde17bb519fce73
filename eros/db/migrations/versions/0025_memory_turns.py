"""The user's turns as a recall layer: ``engine.memory_turns``, one row per user turn
eros read and embedded — its ``seq`` (a foreign key to ``chat_messages.seq``, ON DELETE CASCADE:
the text stays in the product's table, and deleting a message removes its vector), the
session, user and persona, the message's date, a ``halfvec`` vector and its model, a generated
binary sketch for the Hamming pre-scan, a sensitivity label and a status (``current``,
``quarantined``, ``unscreened``). A new, empty table: ``eros turns backfill`` fills it for the
sessions classified before it existed.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import HALFVEC
from sqlalchemy.dialects.postgresql import BIT, UUID

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def _dim() -> int:
    """This run's vector size (EMBEDDING_DIM), handed over by env.py: not read here."""
    return int(op.get_context().opts["embedding_dim"])

S = "engine"
LABELS = "('health', 'crisis', 'sexuality', 'beliefs', 'ethnicity', 'biometric')"


def upgrade() -> None:
    op.create_table(
        "memory_turns",
        sa.Column("seq", sa.BigInteger,
                  sa.ForeignKey(f"{S}.chat_messages.seq", ondelete="CASCADE"),
                  primary_key=True, autoincrement=False),
        sa.Column("session_id", UUID(as_uuid=True), nullable=False),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        sa.Column("instance_id", UUID(as_uuid=True), nullable=True),
        sa.Column("said_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("embedding", HALFVEC(_dim()), nullable=False),
        sa.Column("embedding_model", sa.Text, nullable=False),
        sa.Column("embedding_bq", BIT(_dim()), sa.Computed(
            f"(binary_quantize(embedding))::bit({_dim()})", persisted=True)),
        sa.Column("sensitivity", sa.Text, nullable=True),
        sa.Column("status", sa.Text, nullable=False, server_default=sa.text("'current'")),
        sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.CheckConstraint("status IN ('current', 'quarantined', 'unscreened')",
                           name="ck_memory_turns_status"),
        sa.CheckConstraint(f"sensitivity IS NULL OR sensitivity IN {LABELS}",
                           name="ck_memory_turns_sensitivity"),
        schema=S,
    )
    op.execute(f"ALTER TABLE {S}.memory_turns ALTER COLUMN embedding SET STORAGE MAIN")
    op.create_index("ix_memory_turns_recall", "memory_turns",
                    ["user_id", "instance_id", "status"], schema=S,
                    postgresql_include=["seq", "sensitivity", "embedding_bq"])
    op.create_index("ix_memory_turns_session", "memory_turns", ["session_id"], schema=S)


def downgrade() -> None:
    op.drop_table("memory_turns", schema=S)
