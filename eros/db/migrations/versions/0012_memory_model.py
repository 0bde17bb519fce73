"""The whole memory model: layers, channels, archived sessions, embedding models (issue 18).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
