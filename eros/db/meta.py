"""The schema's name, the vector size and the one ``MetaData`` every table module shares
(:mod:`eros.db.schema`, :mod:`eros.db.turns_schema`)."""

from __future__ import annotations

import os

from sqlalchemy import MetaData

SCHEMA = "engine"
#: the vector column's size is fixed when the table is created (HNSW needs it).
EMBEDDING_DIM = int(os.environ.get("EMBEDDING_DIM", "512") or 512)

metadata = MetaData(schema=SCHEMA)
