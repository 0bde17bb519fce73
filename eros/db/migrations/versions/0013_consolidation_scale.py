"""Incremental consolidation at scale (issue 17).

- ``companion_memories.consolidation_compared_at``: when a pass searched the memory's near
  neighbours. NULL = not yet compared — the per-row marker of "new since the last pass". A row
  marker rather than a created_at watermark: a classify transaction committing late with an
  older created_at is still NULL, so it is never skipped. Existing rows start NULL: the first
  passes after the upgrade work through them in bounded chunks (CONSOLIDATION_CHUNK_SIZE).
- ``ix_companion_memories_uncompared``: a partial index over exactly the rows waiting to be
  compared, so the finder and a pass's chunk read cost O(backlog), never O(all memories).
- ``consolidation_state.measured_backlog``: how many memories were uncompared when the finder
  last measured the user below the threshold; the user is measured again when the count
  changes (a count, so a late commit with an older created_at is noticed; a date was not).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

S = "engine"
_UNCOMPARED = "consolidation_compared_at IS NULL AND status = 'current'"


def upgrade() -> None:
    op.add_column("companion_memories",
                  sa.Column("consolidation_compared_at", sa.DateTime(timezone=True)), schema=S)
    op.create_index("ix_companion_memories_uncompared", "companion_memories",
                    ["user_id", "created_at"], schema=S,
                    postgresql_where=sa.text(_UNCOMPARED))
    op.add_column("consolidation_state", sa.Column("measured_backlog", sa.Integer), schema=S)


def downgrade() -> None:
    op.drop_column("consolidation_state", "measured_backlog", schema=S)
    op.drop_index("ix_companion_memories_uncompared", "companion_memories", schema=S)
    op.drop_column("companion_memories", "consolidation_compared_at", schema=S)
