"""Recall, second part: a binary sketch of every vector and a covering index to scan them.

A heavy user's filtered HNSW scan has a long tail: when the query's neighbourhood belongs to
other users, the scan walks past thousands of their rows (40-100 ms p99 on 1 M rows). An exact
scan of the user's rows reads one 2 KB heap row per memory (~3 µs a row). The sketch is
pgvector's ``binary_quantize(embedding)``: one bit per dimension (64 bytes at 512-d), a stored
generated column, so it can never disagree with the vector. ``ix_companion_memories_recall_bq``
covers the sketch and the id for every current memory, keyed by user, category and instance:
a user's memories are one index range, read by an index-only scan (~0.2 µs a row with the
Hamming distance), and only the best few hundred are re-ranked by exact cosine.

Cost of the upgrade: adding a stored generated column rewrites ``companion_memories`` and
rebuilds its indexes, HNSW included, under an ACCESS EXCLUSIVE lock — seconds for thousands of
rows, minutes for millions (the HNSW rebuild dominates; give the session a large
``maintenance_work_mem``, e.g. ``PGOPTIONS='-c maintenance_work_mem=4GB' eros migrate``).
The rewrite also moves vectors written before 0004 out of TOAST.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import BIT

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _dim() -> int:
    """This run's vector size (EMBEDDING_DIM), handed over by env.py: not read here."""
    return int(op.get_context().opts["embedding_dim"])

S = "engine"


def upgrade() -> None:
    op.add_column("companion_memories", sa.Column(
        "embedding_bq", BIT(_dim()),
        sa.Computed(f"(binary_quantize(embedding))::bit({_dim()})", persisted=True)),
        schema=S)
    op.create_index("ix_companion_memories_recall_bq", "companion_memories",
                    ["user_id", "category", "instance_id"], schema=S,
                    postgresql_include=["id", "embedding_bq"],
                    postgresql_where=sa.text("status = 'current'"))


def downgrade() -> None:
    op.drop_index("ix_companion_memories_recall_bq", table_name="companion_memories", schema=S)
    op.drop_column("companion_memories", "embedding_bq", schema=S)
