"""Float4Array's binary ``real[]`` (eros/memory/db/write_sql.py), packed by numpy: the bytes
PostgreSQL's array format spells out element by element (what ``struct.pack`` wrote before),
so every vector classify, turn indexing and consolidation send arrives as the same float4s."""

from __future__ import annotations

import struct

import numpy as np
import psycopg
from psycopg.adapt import PyFormat

from eros.memory.db.write_sql import Float4Array

_FLOAT4_OID = 700


def _spelled_out(values: list[float]) -> bytes:
    body = b"".join(struct.pack(">if", 4, v) for v in values)
    return struct.pack(">5i", 1, 0, _FLOAT4_OID, len(values), 1) + body


def test_the_array_is_packed_as_postgresql_spells_it_element_by_element() -> None:
    rng = np.random.default_rng(8)
    values = [*rng.standard_normal(3000).tolist(), 0.0, -0.0, 1 / 3, 1e-46, -3.4e38, 123456.789]
    dumper = psycopg.adapters.get_dumper(Float4Array, PyFormat.BINARY)(Float4Array)
    assert dumper.dump(Float4Array(values)) == _spelled_out(values)
    assert dumper.dump(Float4Array([])) == _spelled_out([])
