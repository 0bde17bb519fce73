"""Erasure and privacy: an index on ``companion_memories.replaced_by``.

``replaced_by`` is a self-reference with ON DELETE SET NULL: deleting a memory makes
PostgreSQL look up every row that points at it. Without an index that is a scan of the whole
table per deleted row, so a forget of N memories was quadratic (5,000 memories: 5.3 s, with
the index 0.08–0.22 s; see
bench/RESULTS.md, "Privacy"). The same lookup serves a memory's lineage (forget --memory) and
the export's "what it replaced". Partial: only replaced rows have a value.

No column is added: a classify in flight is fenced by the session's existing ``claim_token``
(a forget clears it), a consolidation pass by ``consolidation_state.claimed_at`` (re-read under
the row lock before writing; a forget deletes the row).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.create_index("ix_companion_memories_replaced_by", "companion_memories", ["replaced_by"],
                    schema=S, postgresql_where=sa.text("replaced_by IS NOT NULL"))


def downgrade() -> None:
    op.drop_index("ix_companion_memories_replaced_by", table_name="companion_memories", schema=S)
