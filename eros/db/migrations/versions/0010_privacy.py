"""Erasure and privacy (issue 14).

No schema change: forget and export need no new column. A classify in flight is fenced by
the session's existing ``claim_token`` (a forget clears it), a consolidation pass by its
``consolidation_state.claimed_at`` (re-read under the row lock before writing; a forget deletes
the row). Kept as a no-op so the chain 0009 → 0010 → 0011 stays linear.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""
from __future__ import annotations

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
