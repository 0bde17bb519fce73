"""Memory provenance: the turns each memory came from.

``companion_memories.source_seqs`` holds the ``chat_messages.seq`` values a memory was
extracted from (sorted, distinct; a consolidated memory carries the union of its members');
NULL means the memory was written before provenance was recorded. ``source_fallback`` is true
when the model's citation was missing or invalid and the extraction window's seqs were used.

The GIN index answers "which memories derive from seq X" (``source_seqs @> ARRAY[X]``), what
``eros forget --message`` asks. Both columns are added without a rewrite (NULL, and a constant
default); the index is built with the table locked against writes, as PostgreSQL's CREATE
INDEX does — empty for existing rows, so it is quick.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.add_column("companion_memories",
                  sa.Column("source_seqs", ARRAY(sa.BigInteger), nullable=True), schema=S)
    op.add_column("companion_memories",
                  sa.Column("source_fallback", sa.Boolean, nullable=False,
                            server_default=sa.text("false")), schema=S)
    op.create_index("ix_companion_memories_source_seqs", "companion_memories",
                    ["source_seqs"], schema=S, postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_companion_memories_source_seqs", table_name="companion_memories",
                  schema=S)
    op.drop_column("companion_memories", "source_fallback", schema=S)
    op.drop_column("companion_memories", "source_seqs", schema=S)
