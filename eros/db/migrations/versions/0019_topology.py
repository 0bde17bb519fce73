"""Production topology: PgBouncer, replica, RabbitMQ (issue 27).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
