"""Memories with controlled vectors, for recall tests.

Similarity is set by construction, not by an embedding model: with the query along ``e0``, the
memory ``cos·e0 + sin·e_j`` (``j ≥ 1``) has cosine similarity exactly ``cos`` to it, and two
memories with different ``j`` are as far apart as their cosines allow. Bulk rows go in with
one binary COPY (numpy vectors through pgvector's psycopg adapter).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from sqlalchemy import Connection, Engine, text
from sqlalchemy.engine import make_url

from eros.db.schema import hnsw_index_sql

DIM = 512


def unit(j: int, dim: int = DIM) -> list[float]:
    vec = [0.0] * dim
    vec[j] = 1.0
    return vec


QUERY = unit(0)


def at_cosine(cos: float, j: int, dim: int = DIM) -> list[float]:
    """A unit vector at cosine ``cos`` from :data:`QUERY`, leaning towards axis ``j`` (≥ 1)."""
    if not 1 <= j < dim:
        raise ValueError("j must be an axis other than 0")
    vec = [0.0] * dim
    vec[0] = cos
    vec[j] = math.sqrt(max(0.0, 1.0 - cos * cos))
    return vec


@dataclass(frozen=True)
class Mem:
    user_id: uuid.UUID
    content: str
    category: str
    vector: Sequence[float]
    instance_id: uuid.UUID | None = None
    importance: float | None = None
    age_days: float = 0.0
    status: str = "current"


def add(conn: Connection, now: datetime, *mems: Mem) -> list[uuid.UUID]:
    """Insert memories (plain SQL, as a writer would); returns their ids in order."""
    ids = []
    for m in mems:
        ids.append(conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, instance_id, content, category,"
            " importance, embedding, created_at, status) VALUES (:u, :i, :c, :cat, :imp,"
            " CAST(:v AS vector), :at, :st) RETURNING id"),
            {"u": m.user_id, "i": m.instance_id, "c": m.content, "cat": m.category,
             "imp": m.importance, "v": "[" + ",".join(map(repr, m.vector)) + "]",
             "at": now - timedelta(days=m.age_days), "st": m.status}).scalar_one())
    return ids


HNSW_INDEX = hnsw_index_sql()


def copy_rows(db_url: str, rows: Iterable[tuple[uuid.UUID, uuid.UUID | None, str, str,
                                                 float | None, datetime, np.ndarray]]) -> int:
    """Binary COPY of (user, instance, content, category, importance, created_at, vector)
    rows on a connection of its own (so the vector adapter never reaches a pooled one).

    The HNSW index, where the database has one (:func:`with_hnsw`), is dropped for the load
    and built again afterwards, in one transaction: inserting row by row into the graph is an
    order of magnitude slower than building it."""
    url = make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)
    n = 0
    with psycopg.connect(url) as conn:
        register_vector(conn)
        had = conn.execute("SELECT to_regclass('engine.ix_companion_memories_embedding_hnsw')"
                           ).fetchone()
        conn.execute("DROP INDEX IF EXISTS engine.ix_companion_memories_embedding_hnsw")
        with conn.cursor() as cur, cur.copy(
                "COPY engine.companion_memories (user_id, instance_id, content, category,"
                " importance, created_at, embedding) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["uuid", "uuid", "text", "text", "float8", "timestamptz", "vector"])
            for row in rows:
                copy.write_row(row)
                n += 1
        if had is not None and had[0] is not None:
            conn.execute(HNSW_INDEX)
        conn.commit()
        conn.execute("ANALYZE engine.companion_memories")
    return n


def with_hnsw(engine: Engine) -> None:
    """Build the memories' HNSW index (what `eros migrate` does for RECALL_QUANTIZED_SCAN=false;
    a migrated test database has none): for the tests of the plans that read it."""
    with engine.begin() as conn:
        conn.execute(text(HNSW_INDEX.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)))
        conn.execute(text("ANALYZE engine.companion_memories"))


def random_unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    vec = rng.standard_normal((n, dim)).astype(np.float32)
    return vec / np.linalg.norm(vec, axis=1, keepdims=True)


def near_query(rng: np.random.Generator, n: int, cos: float, dim: int = DIM) -> np.ndarray:
    """``n`` unit vectors at cosine ≈ ``cos`` from :data:`QUERY` (random directions otherwise)."""
    noise = random_unit(rng, n, dim)
    noise[:, 0] = 0.0
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    out = noise * np.float32(math.sqrt(1 - cos * cos))
    out[:, 0] = cos
    return out.astype(np.float32)
