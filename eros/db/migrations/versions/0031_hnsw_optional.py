"""The memories' HNSW index leaves the alembic schema: it exists only where a configured plan
reads it.

``ix_companion_memories_embedding_hnsw`` is read by recall only with RECALL_QUANTIZED_SCAN=false
and by consolidation only above CONSOLIDATION_HNSW_ABOVE (now 0 = never by default); with the
defaults nothing reads it, yet each current row written paid an insert into the graph (~2.6 ms
of a classified session's CPU; most of a first pass's canonical-row writes). From this revision
on the migrations leave it alone: ``eros migrate`` (and ``eros run``) build or drop it as the
settings say after the migrations (:mod:`eros.db.hnsw_index`, CONCURRENTLY), the same on a
fresh database and on an upgraded one, and a deployment that reads it keeps its graph (not
rebuilt). The upgrade changes nothing itself: what the settings need is not a migration's
business (its result would depend on the migrating process's environment), and a plain
``alembic upgrade head`` leaves the index as it was.

The downgrade builds 0028's partial index again when it is missing (in the transaction: writes
to the memories wait for the build).

Self-contained: no import of the live schema code and no environment read.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-06
"""
from __future__ import annotations

from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_companion_memories_embedding_hnsw"
               " ON engine.companion_memories USING hnsw (embedding vector_cosine_ops)"
               " WHERE status = 'current'")
