"""The memories' HNSW index only where a configured plan reads it (issue 34 items 2 and 3).

``ix_companion_memories_embedding_hnsw`` is read by recall only with RECALL_QUANTIZED_SCAN=false
and by consolidation only above CONSOLIDATION_HNSW_ABOVE (now 0 = never by default); with the
defaults nothing reads it, yet each current row written paid an insert into the graph (~2.6 ms
of a classified session's CPU; most of a first pass's canonical-row writes). It leaves the
alembic schema: this revision drops it unless the migrating process's settings read it (so a
deployment that does keeps its graph, not rebuilt), and ``eros migrate`` then builds or drops it
as the settings say (:mod:`eros.db.hnsw_index`, CONCURRENTLY, after the migrations).

The downgrade builds 0028's partial index again when it is missing (in the transaction: writes
to the memories wait for the build).

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-06
"""
from __future__ import annotations

from alembic import op

from eros.db import hnsw_index
from eros.db.schema import hnsw_index_sql
from eros.settings import load_settings

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not hnsw_index.wanted(load_settings()):
        op.execute(f"DROP INDEX IF EXISTS {hnsw_index.QUALIFIED}")


def downgrade() -> None:
    op.execute(hnsw_index_sql().replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))
