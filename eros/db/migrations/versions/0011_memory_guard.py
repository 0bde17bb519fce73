"""Memory poisoning guard (issue 15).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
