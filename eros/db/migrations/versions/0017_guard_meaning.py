"""Meaning-based memory guard: quarantine and the classifier cache (issue 25).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
