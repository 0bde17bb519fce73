"""The guard is ready before the first session: ``unscreened`` memories and the
training's cost.

- ``companion_memories.status`` may be ``unscreened``: a candidate that passed the rules and
  the secret checks while the meaning layer had no model yet (a live embedder whose model is
  still being trained). Never recalled nor consolidated (both read ``current`` only) until
  ``eros.screen_unscreened`` decides: ``current``, or ``quarantined`` with the reason. The check
  constraint is replaced, which validates every row once (a scan, no rewrite).
- ``ix_companion_memories_unscreened`` (partial): what that beat task reads; empty in normal
  operation.
- ``guard_classifiers.embedding_tokens`` / ``cost_usd``: what embedding the bank cost when
  the model was trained (``eros status`` shows it; the training is logged once).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-05
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.drop_constraint("ck_companion_memories_status", "companion_memories", schema=S)
    op.create_check_constraint(
        "ck_companion_memories_status", "companion_memories",
        "status IN ('current', 'merged', 'superseded', 'quarantined', 'unscreened')", schema=S)
    op.create_index("ix_companion_memories_unscreened", "companion_memories", ["id"], schema=S,
                    postgresql_where=sa.text("status = 'unscreened'"))
    op.add_column("guard_classifiers", sa.Column("embedding_tokens", sa.Integer, nullable=False,
                                                 server_default=sa.text("0")), schema=S)
    op.add_column("guard_classifiers", sa.Column("cost_usd", sa.Numeric(12, 6), nullable=False,
                                                 server_default=sa.text("0")), schema=S)


def downgrade() -> None:
    op.drop_column("guard_classifiers", "cost_usd", schema=S)
    op.drop_column("guard_classifiers", "embedding_tokens", schema=S)
    op.drop_index("ix_companion_memories_unscreened", table_name="companion_memories", schema=S)
    # an unscreened memory must not reach recall after a downgrade: it waits as quarantined
    # (``eros rescreen --restore`` brings one back)
    op.execute(f"UPDATE {S}.companion_memories SET status = 'quarantined',"
               " replaced_at = coalesce(replaced_at, now()),"
               " metadata = metadata || jsonb_build_object('guard_quarantine',"
               " jsonb_build_object('reason', 'unscreened', 'layer', 'meaning', 'at', now()))"
               " WHERE status = 'unscreened'")
    op.drop_constraint("ck_companion_memories_status", "companion_memories", schema=S)
    op.create_check_constraint(
        "ck_companion_memories_status", "companion_memories",
        "status IN ('current', 'merged', 'superseded', 'quarantined')", schema=S)
