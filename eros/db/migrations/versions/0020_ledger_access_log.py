"""The memory ledger's access log.

- ``ledger_access_log``: one row per view of a user's ledger and per action taken in
  ``eros ledger`` — ``id``, ``at`` (time), ``action`` (``view_user``, ``recall``, ``export``,
  ``forget_memory``, ``forget_message``, ``forget_user``, ``restore``), ``user_id`` (whose data
  was looked at or acted on) and ``object_id`` (the memory or message acted on, if any) — ids
  only, never text. Read with ``eros ledger-log``.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.create_table(
        "ledger_access_log",
        sa.Column("id", sa.BigInteger, sa.Identity(always=False), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("user_id", UUID(as_uuid=True), nullable=True),
        sa.Column("object_id", UUID(as_uuid=True), nullable=True),
        schema=S,
    )
    op.create_index("ix_ledger_access_log_user", "ledger_access_log", ["user_id", "at"],
                    schema=S)


def downgrade() -> None:
    op.drop_index("ix_ledger_access_log_user", table_name="ledger_access_log", schema=S)
    op.drop_table("ledger_access_log", schema=S)
