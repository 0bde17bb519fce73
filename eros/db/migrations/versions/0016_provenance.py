"""Memory provenance: the turns each memory came from (issue 24).

Placeholder: reserved so the migration chain stays linear while this work is in progress.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
