"""The replica heartbeat: ``engine.replica_heartbeat``, one row (``id`` = 1) whose
``beat_at`` the primary's beat process updates every RECALL_REPLICA_HEARTBEAT_SECS. A replica
reads its replayed copy: how old it is says how far behind the replica is, even when its WAL
receiver is disconnected (then received = replayed and the old measure read 0). A new table.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.create_table(
        "replica_heartbeat",
        sa.Column("id", sa.SmallInteger, primary_key=True, autoincrement=False),
        sa.Column("beat_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.CheckConstraint("id = 1", name="ck_replica_heartbeat_one_row"),
        schema=S,
    )


def downgrade() -> None:
    op.drop_table("replica_heartbeat", schema=S)
