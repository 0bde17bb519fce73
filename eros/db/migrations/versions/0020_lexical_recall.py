"""Recall quality on LoCoMo: lexical signal and dates (issue 24).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
