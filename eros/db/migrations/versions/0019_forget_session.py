"""Forgetting a whole conversation: ``eros forget --session`` and the task
``eros.forget_session`` are recorded in ``erasure_log`` with scope ``session`` and the
session's id in a new column ``session_id`` (UUID NULL; the other scopes leave it NULL).

ADD COLUMN without a default is a catalogue change; the scope check is replaced by one that
also admits ``session`` (added NOT VALID, then validated: the log is small and every existing
row already passes).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

S = "engine"
OLD = "('user', 'persona', 'memory', 'sensitive', 'message')"
NEW = "('user', 'persona', 'memory', 'sensitive', 'message', 'session')"


def _scope_check(scopes: str) -> None:
    op.drop_constraint("ck_erasure_log_scope", "erasure_log", schema=S)
    op.execute(f"ALTER TABLE {S}.erasure_log ADD CONSTRAINT ck_erasure_log_scope"
               f" CHECK (scope IN {scopes}) NOT VALID")
    op.execute(f"ALTER TABLE {S}.erasure_log VALIDATE CONSTRAINT ck_erasure_log_scope")


def upgrade() -> None:
    op.add_column("erasure_log", sa.Column("session_id", UUID(as_uuid=True), nullable=True),
                  schema=S)
    _scope_check(NEW)


def downgrade() -> None:
    op.execute(f"DELETE FROM {S}.erasure_log WHERE scope = 'session'")
    _scope_check(OLD)
    op.drop_column("erasure_log", "session_id", schema=S)
