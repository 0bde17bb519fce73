"""The schema's name, the vector size and the one ``MetaData`` every table module shares
(:mod:`eros.db.schema`, :mod:`eros.db.turns_schema`, :mod:`eros.db.records_schema`), and the
columns they all spell the same way."""

from __future__ import annotations

import os

from sqlalchemy import Column, DateTime, MetaData, text
from sqlalchemy.dialects.postgresql import UUID

SCHEMA = "engine"
#: the vector column's size is fixed when the table is created (HNSW needs it).
EMBEDDING_DIM = int(os.environ.get("EMBEDDING_DIM", "512") or 512)

metadata = MetaData(schema=SCHEMA)


def uuid_pk() -> Column[object]:
    """``id``: a UUID the server draws."""
    return Column("id", UUID(as_uuid=True), primary_key=True,
                  server_default=text("gen_random_uuid()"))


def now_column(name: str) -> Column[object]:
    """A timestamp the server sets when the row is written."""
    return Column(name, DateTime(timezone=True), nullable=False, server_default=text("now()"))
