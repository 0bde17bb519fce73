"""Trust on the turns recall layer: ``eros relabel`` labels the indexed turns
too, and retention deletes quarantined turn vectors.

``relabel_progress`` gains ``after_seq``: the last turn (``memory_turns.seq``) a turn scan
read. A labeller's turn scan has its own row, keyed ``<labeller>:turns`` (``offline:turns``,
``model:turns``), beside the memory scan's row (``after_id``); its cut-off is the time the
run began (turns indexed later were labelled when they were written).

``ix_memory_turns_quarantined`` (partial, on ``indexed_at``): the turns the guard quarantined,
which HISTORY_RETENTION_DAYS deletes (a read that costs nothing however many turns are
indexed: only quarantined ones are in it).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-06
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

S = "engine"


def upgrade() -> None:
    op.add_column("relabel_progress", sa.Column("after_seq", sa.BigInteger, nullable=True),
                  schema=S)
    op.create_index("ix_memory_turns_quarantined", "memory_turns", ["indexed_at"], schema=S,
                    postgresql_where=sa.text("status = 'quarantined'"))


def downgrade() -> None:
    op.drop_index("ix_memory_turns_quarantined", table_name="memory_turns", schema=S)
    op.drop_column("relabel_progress", "after_seq", schema=S)
