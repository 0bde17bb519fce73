"""The turns recall layer filled: what ``eros.screen_unscreened`` reads of
the turns, and the backfill's cursor.

- ``ix_memory_turns_unscreened`` (partial, on ``seq``): the turns indexed ``unscreened`` while
  the guard's meaning layer had no model; empty in normal operation, so the beat task's read
  costs nothing however many turns are indexed.
- ``engine.turn_backfill``: one row per backfill (``turns``): the last ``chat_messages.seq``
  scanned, the newest seq that existed when the run began (``cutoff_seq``: later turns are
  indexed by classify), counts, when it started, last moved and finished. ``eros turns
  backfill`` resumes from it.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-06
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.create_index("ix_memory_turns_unscreened", "memory_turns", ["seq"], schema=S,
                    postgresql_where=sa.text("status = 'unscreened'"))
    op.create_table(
        "turn_backfill",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("after_seq", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("cutoff_seq", sa.BigInteger, nullable=False),
        sa.Column("scanned", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("indexed", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        schema=S,
    )


def downgrade() -> None:
    op.drop_table("turn_backfill", schema=S)
    op.drop_index("ix_memory_turns_unscreened", table_name="memory_turns", schema=S)
