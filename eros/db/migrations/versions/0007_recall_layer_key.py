"""Recall, third part: one covering index per user, layer and category.

0006 keyed ``ix_companion_memories_recall_bq`` by (user, category, instance) over current
memories. Two things went wrong with it at scale:

- Scope ``both`` (the profile layer plus one persona's) read *every* persona's sketches of the
  user and filtered the other personas' out: for a user with several personas most of the
  scan was thrown away.
- Beside it, ``ix_companion_memories_user_layer`` (0001, every status) and
  ``ix_companion_memories_recall`` (0004, current) had the key (user, instance, category)
  without the sketch. Under a *generic* plan (psycopg prepares a statement run 5 times and
  PostgreSQL then caches a plan made without the parameters' values) the planner estimates one
  row for ``instance_id = $2`` and takes the smaller, non-covering index: a heavy persona's
  11,000 rows became 11,000 heap fetches, 130 ms instead of 13.

Now one index does all three jobs: ``(user_id, instance_id, category, status) INCLUDE (id,
embedding_bq)`` over every row. Each layer is one tight index range (``both`` reads the
profile's and the persona's and nothing of another persona's), a category within a layer is a
sub-range, ``status`` is a key column (current memories are an index condition, and replaced
ones are in the same index when asked for), and there is no other index on those columns for a
generic plan to pick. One index instead of three on every insert.

Cost of the upgrade: one index build over the table (no rewrite); the old indexes are dropped
in the same transaction, so no query runs without one.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

S = "engine"
T = "companion_memories"
_CURRENT = sa.text("status = 'current'")
_LAYER = ["user_id", "instance_id", "category"]


def upgrade() -> None:
    op.drop_index("ix_companion_memories_recall_bq", table_name=T, schema=S)
    op.create_index("ix_companion_memories_recall_bq", T, [*_LAYER, "status"], schema=S,
                    postgresql_include=["id", "embedding_bq"])
    op.drop_index("ix_companion_memories_recall", table_name=T, schema=S)
    op.drop_index("ix_companion_memories_user_layer", table_name=T, schema=S)


def downgrade() -> None:
    op.create_index("ix_companion_memories_user_layer", T, _LAYER, schema=S)
    op.create_index("ix_companion_memories_recall", T, _LAYER, schema=S,
                    postgresql_where=_CURRENT)
    op.drop_index("ix_companion_memories_recall_bq", table_name=T, schema=S)
    op.create_index("ix_companion_memories_recall_bq", T, ["user_id", "category", "instance_id"],
                    schema=S, postgresql_include=["id", "embedding_bq"],
                    postgresql_where=_CURRENT)
