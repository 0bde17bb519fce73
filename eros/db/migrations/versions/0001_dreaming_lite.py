"""Dreaming-lite schema: sessions, messages, memories, classification runs.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import JSONB, UUID

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _dim() -> int:
    """This run's vector size (EMBEDDING_DIM), handed over by env.py: not read here."""
    return int(op.get_context().opts["embedding_dim"])

S = "engine"
NOW = sa.text("now()")
UUID_DEFAULT = sa.text("gen_random_uuid()")

TOUCH_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {S}.chat_messages_touch_session() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- New turns make a session active again and, if it was classified, eligible again:
    -- only turns past classified_through_seq are extracted next time.
    UPDATE {S}.chat_sessions AS s
       SET last_active_at = GREATEST(s.last_active_at, n.latest),
           classified_at = NULL
      FROM (SELECT session_id, max(sent_at) AS latest FROM new_rows GROUP BY session_id) AS n
     WHERE s.id = n.session_id
       AND (s.classified_at IS NOT NULL OR s.last_active_at < n.latest);
    RETURN NULL;
END $$;
"""


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(f"CREATE SCHEMA IF NOT EXISTS {S}")
    op.create_table(
        "chat_sessions",
        sa.Column("id", UUID(as_uuid=True), primary_key=True, server_default=UUID_DEFAULT),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        sa.Column("instance_id", UUID(as_uuid=True), nullable=True),
        sa.Column("last_active_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("classified_at", sa.DateTime(timezone=True)),
        sa.Column("classification_claimed_at", sa.DateTime(timezone=True)),
        sa.Column("claim_token", UUID(as_uuid=True)),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True)),
        sa.Column("attempts", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("classified_through_seq", sa.BigInteger, nullable=False,
                  server_default=sa.text("0")),
        sa.Column("dead_lettered_at", sa.DateTime(timezone=True)),
        sa.Column("outcome", sa.Text),
        sa.Column("outcome_at", sa.DateTime(timezone=True)),
        sa.Column("memory_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("model", sa.Text),
        sa.Column("prompt_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("completion_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("embedding_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("last_error", sa.Text),
        schema=S,
    )
    op.create_index("ix_chat_sessions_claimable", "chat_sessions", ["last_active_at"], schema=S,
                    postgresql_where=sa.text("classified_at IS NULL AND dead_lettered_at IS NULL"))
    op.create_index("ix_chat_sessions_user", "chat_sessions", ["user_id"], schema=S)
    op.create_index("ix_chat_sessions_dead", "chat_sessions", ["dead_lettered_at"], schema=S,
                    postgresql_where=sa.text("dead_lettered_at IS NOT NULL"))

    op.create_table(
        "chat_messages",
        sa.Column("id", UUID(as_uuid=True), primary_key=True, server_default=UUID_DEFAULT),
        sa.Column("session_id", UUID(as_uuid=True),
                  sa.ForeignKey(f"{S}.chat_sessions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False, server_default=sa.text("''")),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("seq", sa.BigInteger, sa.Identity(always=False), nullable=False, unique=True),
        schema=S,
    )
    op.create_index("ix_chat_messages_session_order", "chat_messages",
                    ["session_id", "sent_at", "seq"], schema=S)
    op.create_index("ix_chat_messages_session_seq", "chat_messages", ["session_id", "seq"],
                    schema=S)
    op.execute(TOUCH_FUNCTION)
    op.execute(f"""
        CREATE TRIGGER chat_messages_touch_session
        AFTER INSERT ON {S}.chat_messages
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {S}.chat_messages_touch_session()
    """)

    op.create_table(
        "companion_memories",
        sa.Column("id", UUID(as_uuid=True), primary_key=True, server_default=UUID_DEFAULT),
        sa.Column("session_id", UUID(as_uuid=True),
                  sa.ForeignKey(f"{S}.chat_sessions.id", ondelete="SET NULL"), nullable=True),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        sa.Column("instance_id", UUID(as_uuid=True), nullable=True),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("category", sa.Text, nullable=False),
        sa.Column("importance", sa.Float, nullable=True),
        sa.Column("metadata", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("embedding", Vector(_dim()), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("dedup_key", sa.Text, nullable=True, unique=True),
        sa.Column("model", sa.Text),
        sa.CheckConstraint(f"category IN ('fact', 'preference', 'event', 'emotion', 'relation')", name="ck_companion_memories_category"),
        sa.CheckConstraint("importance IS NULL OR (importance >= 0 AND importance <= 1)",
                           name="ck_companion_memories_importance"),
        schema=S,
    )
    op.create_index("ix_companion_memories_user_layer", "companion_memories",
                    ["user_id", "instance_id", "category"], schema=S)
    op.create_index("ix_companion_memories_session", "companion_memories", ["session_id"],
                    schema=S)
    op.create_index("ix_companion_memories_embedding_hnsw", "companion_memories", ["embedding"],
                    schema=S, postgresql_using="hnsw",
                    postgresql_ops={"embedding": "vector_cosine_ops"})

    op.create_table(
        "classification_runs",
        sa.Column("id", sa.BigInteger, sa.Identity(always=False), primary_key=True),
        sa.Column("session_id", UUID(as_uuid=True),
                  sa.ForeignKey(f"{S}.chat_sessions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        sa.Column("task_id", sa.Text),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("memory_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("model", sa.Text),
        sa.Column("prompt_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("completion_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("embedding_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("error", sa.Text),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        schema=S,
    )
    op.create_index("ix_classification_runs_session", "classification_runs", ["session_id"],
                    schema=S)
    op.create_index("ix_classification_runs_finished", "classification_runs", ["finished_at"],
                    schema=S)


def downgrade() -> None:
    op.drop_table("classification_runs", schema=S)
    op.drop_table("companion_memories", schema=S)
    op.execute(f"DROP TRIGGER IF EXISTS chat_messages_touch_session ON {S}.chat_messages")
    op.execute(f"DROP FUNCTION IF EXISTS {S}.chat_messages_touch_session()")
    op.drop_table("chat_messages", schema=S)
    op.drop_table("chat_sessions", schema=S)
