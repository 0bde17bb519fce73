"""The memories' HNSW index holds current rows only.

A consolidation pass marks each merged or superseded member with an UPDATE of ``status``:
``status`` is in an index key and in three index predicates, and a 2 KB row with its vector
inline leaves no room on its page, so the update is never HOT and the row's new version was
inserted into the HNSW graph again — ~75% of the first pass's writes at 50k memories
(bench/RESULTS.md). Nothing reads the graph for replaced rows: recall's HNSW plan and
consolidation's ask for ``status = 'current'`` (a recall with ``include_replaced`` reads the
history rows exactly, beside the graph's current ones). As a partial index on
``status = 'current'``, a replaced row leaves the graph instead of entering it again, and
the graph is smaller for every insert (a new memory, a canonical row).

The upgrade builds the new index under a temporary name and swaps it in, in the migration's
transaction: like 0001's build it blocks writes to the memories (not reads) while the graph is
built — seconds for thousands of rows, minutes for millions (give the session a large
``maintenance_work_mem``). The downgrade builds the full index again.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-06
"""
from __future__ import annotations

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

T = "engine.companion_memories"
NAME = "ix_companion_memories_embedding_hnsw"


def _swap(where: str) -> None:
    op.execute(f"CREATE INDEX {NAME}_new ON {T} USING hnsw (embedding vector_cosine_ops)"
               f"{where}")
    op.execute(f"DROP INDEX IF EXISTS engine.{NAME}")
    op.execute(f"ALTER INDEX engine.{NAME}_new RENAME TO {NAME}")


def upgrade() -> None:
    _swap(" WHERE status = 'current'")


def downgrade() -> None:
    _swap("")
