"""Incremental consolidation at scale (issue 17).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
