"""The whole memory model: channels, archived sessions, embedding models.

- ``chat_messages.channel`` (``text`` by default): which turns extraction reads
  (DREAMING_CHANNELS);
- ``chat_sessions.archived_at``: an archived session is never claimed. The claim's partial
  index gains ``archived_at IS NULL`` so it keeps serving the claim in O(batch): archived
  sessions leave the index instead of being skipped one by one;
- ``companion_memories.embedding_model``: the model that produced the row's vector (NULL = a
  row written before this migration, taken to be on the configured EMBEDDING_MODEL), indexed
  per user so recall finds a user's models with a few index probes, and re-embedding (``eros
  reembed``) finds what is left to do.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

S = "engine"
_OPEN = "classified_at IS NULL AND dead_lettered_at IS NULL"


def upgrade() -> None:
    op.add_column("chat_messages", sa.Column("channel", sa.Text, nullable=False,
                                             server_default=sa.text("'text'")), schema=S)
    op.add_column("chat_sessions", sa.Column("archived_at", sa.DateTime(timezone=True)),
                  schema=S)
    op.drop_index("ix_chat_sessions_claimable", "chat_sessions", schema=S)
    op.create_index("ix_chat_sessions_claimable", "chat_sessions", ["last_active_at"], schema=S,
                    postgresql_where=sa.text(f"{_OPEN} AND archived_at IS NULL"))
    op.add_column("companion_memories", sa.Column("embedding_model", sa.Text), schema=S)
    op.create_index("ix_companion_memories_user_model", "companion_memories",
                    ["user_id", "embedding_model"], schema=S)


def downgrade() -> None:
    op.drop_index("ix_companion_memories_user_model", "companion_memories", schema=S)
    op.drop_column("companion_memories", "embedding_model", schema=S)
    op.drop_index("ix_chat_sessions_claimable", "chat_sessions", schema=S)
    op.create_index("ix_chat_sessions_claimable", "chat_sessions", ["last_active_at"], schema=S,
                    postgresql_where=sa.text(_OPEN))
    op.drop_column("chat_sessions", "archived_at", schema=S)
    op.drop_column("chat_messages", "channel", schema=S)
