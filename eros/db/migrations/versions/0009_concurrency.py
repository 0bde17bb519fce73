"""Concurrency and fault fixes (issue 16).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
