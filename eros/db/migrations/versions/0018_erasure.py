"""Erasure log, tombstones and the sensitivity column.

- ``erasure_log``: one row per erasure request — ``id``, ``scope`` (``user`` | ``persona`` |
  ``memory`` | ``sensitive`` | ``message``; ``message`` is ``eros forget
  --message``), ``user_id``, ``instance_id``, ``memory_id``, ``requested_at``,
  ``completed_at``, ``status`` (``done`` | ``failed``), ``counts`` (jsonb: rows removed per
  table), ``task_id``, ``error_code`` — ids, counts and codes only, never text.
- Tombstones, two columns of ``chat_sessions``: ``erased_through_seq`` (the floor a user or
  persona forget sets to the session's last_seq: no extraction reads a turn at or below it
  again, whatever resets the watermark) and ``erased_seqs`` (BIGINT[] NULL: the source turns of
  a forgotten memory, taken out of every later extraction of their session). Columns of the
  row the turn read joins anyway, not a table: the check is two comparisons per turn, no
  extra index probe; the claim does not change. ADD COLUMN with a constant default is a catalogue change
  (no table rewrite, PostgreSQL >= 11).
- ``companion_memories.sensitivity``: TEXT NULL, one of health, crisis, sexuality, beliefs,
  ethnicity, biometric (GDPR art. 9 special categories); NULL = none. Also a catalogue change;
  the check constraint is added NOT VALID and then validated (every existing row is NULL), so
  writes are not blocked for a scan of the table.
- ``ix_companion_memories_replaced_at`` (partial: replaced rows only): what the retention of
  merged and superseded rows (HISTORY_RETENTION_DAYS) reads.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

S = "engine"
SCOPES = "('user', 'persona', 'memory', 'sensitive', 'message')"
LABELS = "('health', 'crisis', 'sexuality', 'beliefs', 'ethnicity', 'biometric')"


def upgrade() -> None:
    op.create_table(
        "erasure_log",
        sa.Column("id", sa.BigInteger, sa.Identity(always=False), primary_key=True),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("user_id", UUID(as_uuid=True), nullable=True),
        sa.Column("instance_id", UUID(as_uuid=True), nullable=True),
        sa.Column("memory_id", UUID(as_uuid=True), nullable=True),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("counts", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("task_id", sa.Text, nullable=True),
        sa.Column("error_code", sa.Text, nullable=True),
        sa.CheckConstraint(f"scope IN {SCOPES}", name="ck_erasure_log_scope"),
        sa.CheckConstraint("status IN ('done', 'failed')", name="ck_erasure_log_status"),
        schema=S,
    )
    op.create_index("ix_erasure_log_user", "erasure_log", ["user_id", "requested_at"], schema=S)
    op.create_index("ix_erasure_log_failed", "erasure_log", ["requested_at"], schema=S,
                    postgresql_where=sa.text("status = 'failed'"))
    op.add_column("chat_sessions", sa.Column("erased_through_seq", sa.BigInteger,
                                             nullable=False, server_default=sa.text("0")),
                  schema=S)
    op.add_column("chat_sessions", sa.Column("erased_seqs", ARRAY(sa.BigInteger), nullable=True),
                  schema=S)
    op.add_column("companion_memories", sa.Column("sensitivity", sa.Text, nullable=True),
                  schema=S)
    op.execute(f"ALTER TABLE {S}.companion_memories ADD CONSTRAINT"
               f" ck_companion_memories_sensitivity CHECK (sensitivity IS NULL"
               f" OR sensitivity IN {LABELS}) NOT VALID")
    op.execute(f"ALTER TABLE {S}.companion_memories VALIDATE CONSTRAINT"
               " ck_companion_memories_sensitivity")
    op.create_index("ix_companion_memories_replaced_at", "companion_memories", ["replaced_at"],
                    schema=S, postgresql_where=sa.text("status <> 'current'"))


def downgrade() -> None:
    op.drop_index("ix_companion_memories_replaced_at", table_name="companion_memories",
                  schema=S)
    op.drop_constraint("ck_companion_memories_sensitivity", "companion_memories", schema=S)
    op.drop_column("companion_memories", "sensitivity", schema=S)
    op.drop_column("chat_sessions", "erased_seqs", schema=S)
    op.drop_column("chat_sessions", "erased_through_seq", schema=S)
    op.drop_index("ix_erasure_log_failed", table_name="erasure_log", schema=S)
    op.drop_index("ix_erasure_log_user", table_name="erasure_log", schema=S)
    op.drop_table("erasure_log", schema=S)
