"""Erasure log, tombstones and sensitive memories (issue 26).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
