"""Synthetic memories for the consolidation benchmark, loaded by binary COPY.

Per user: ``(1 − dup_share) · n`` distinct memories with random unit vectors (in 512-d random
vectors are nearly orthogonal: cosine ≈ 0 ± 0.05, so no accidental near pairs at θ = 0.85),
then ``dup_share · n`` near-duplicates of randomly chosen ones — half exact copies (same text,
same vector), half restatements (other text, cosine ≈ 0.95) — in their source's category and
newer than it. So "20% near-duplicates" means 20% of the rows were written as a repeat of
another; the near-duplicate *share* (memories with a twin, originals included) is higher.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg

CATEGORIES = ("fact", "preference", "event", "emotion", "relation")
CATEGORY_P = (0.30, 0.25, 0.20, 0.15, 0.10)
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_COPY_SQL = ("COPY engine.companion_memories (user_id, content, category, importance,"
             " created_at, embedding, embedding_model) FROM STDIN (FORMAT BINARY)")
#: the embedding model every generated row is labelled with — the bench embedder's name, so
#: the rows a pass writes (labelled by its embedder) are comparable with the loaded ones: a
#: pass only pairs memories of one model, and a corpus of NULL labels beside the passes'
#: labelled canonical rows made every restatement of a canonical row unmergeable.
EMBEDDING_MODEL = "bench-random"
_MODEL = EMBEDDING_MODEL.encode()
#: per-dimension noise giving cosine ≈ 0.95 to the source: tan(acos(0.95)) / sqrt(dim).
_RESTATE_NOISE = 0.3287


def user_rows(rng: np.random.Generator, user: uuid.UUID, n: int, dup_share: float, dim: int,
              base_us: int) -> bytes:
    """COPY BINARY tuples (no header) for one user's ``n`` memories."""
    n_dup = round(n * dup_share)
    n_base = n - n_dup
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    cats = rng.choice(len(CATEGORIES), n, p=CATEGORY_P)
    ages = rng.uniform(60, 730, n)  # days
    source = rng.integers(0, n_base, n_dup)
    exact = rng.random(n_dup) < 0.5
    texts = [f"memory {i} of {str(user)[:8]}" for i in range(n_base)]
    for j in range(n_dup):
        i, s = n_base + j, int(source[j])
        cats[i] = cats[s]
        ages[i] = ages[s] * rng.uniform(0.0, 0.9)
        if exact[j]:
            vectors[i] = vectors[s]
            texts.append(texts[s])
        else:
            vectors[i] = vectors[s] / np.linalg.norm(vectors[s]) * np.sqrt(dim) \
                + rng.standard_normal(dim).astype(np.float32) * _RESTATE_NOISE
            texts.append(f"{texts[s]}, restated {j}")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    big = vectors.astype(">f4")
    importance = rng.uniform(0.05, 1.0, n)
    vec_head = struct.pack(">iHH", 4 + 4 * dim, dim, 0)
    field_count, uid = struct.pack(">h", 7), b"\x00\x00\x00\x10" + user.bytes
    parts = []
    for i in range(n):
        content, cat = texts[i].encode(), CATEGORIES[cats[i]].encode()
        parts.append(b"".join((
            field_count, uid,
            struct.pack(">i", len(content)), content,
            struct.pack(">i", len(cat)), cat,
            struct.pack(">id", 8, float(importance[i])),
            struct.pack(">iq", 8, base_us - int(ages[i] * 86400e6)),
            vec_head, big[i].tobytes(),
            struct.pack(">i", len(_MODEL)), _MODEL)))
    return b"".join(parts)


def load(conninfo: str, users: Sequence[uuid.UUID], per_user: int, *, dup_share: float = 0.2,
         dim: int = 512, seed: int = 17, chunk_users: int = 500) -> int:
    """COPY ``per_user`` memories for each user; returns the rows written."""
    rng = np.random.default_rng(seed)
    base_us = int((datetime.now(UTC) - _PG_EPOCH) / timedelta(microseconds=1))
    with psycopg.connect(conninfo) as conn, conn.cursor() as cur, cur.copy(_COPY_SQL) as copy:
        copy.write(_COPY_HEADER)
        for start in range(0, len(users), chunk_users):
            copy.write(b"".join(user_rows(rng, u, per_user, dup_share, dim, base_us)
                                for u in users[start:start + chunk_users]))
        copy.write(struct.pack(">h", -1))
    return len(users) * per_user


def user_ids(n: int, seed: int) -> list[uuid.UUID]:
    rng = np.random.default_rng(seed)
    return [uuid.UUID(bytes=rng.bytes(16), version=4) for _ in range(n)]



def add_new(conninfo: str, user: uuid.UUID, n: int, n_dup: int, dim: int, *, seed: int) -> None:
    """``n`` new memories for ``user`` dated now: ``n_dup`` restate existing current ones
    (cosine ≈ 0.95, same category), the rest are distinct — what arrives between two passes."""
    rng = np.random.default_rng(seed)
    with psycopg.connect(conninfo) as conn:
        sources = conn.execute(
            "SELECT category, embedding::text FROM engine.companion_memories"
            " WHERE user_id = %s AND status = 'current' ORDER BY id LIMIT %s",
            (user, n_dup)).fetchall()
        rows = []
        for j, (cat, vec_text) in enumerate(sources):
            vec = np.array([float(x) for x in vec_text.strip("[]").split(",")], np.float32)
            vec = vec * np.sqrt(dim) + rng.standard_normal(dim).astype(np.float32) \
                * _RESTATE_NOISE
            rows.append((f"restated new {j}", cat, vec))
        for j in range(n - len(rows)):
            cat = CATEGORIES[int(rng.choice(len(CATEGORIES), p=CATEGORY_P))]
            rows.append((f"new memory {j}", cat, rng.standard_normal(dim).astype(np.float32)))
        conn.cursor().executemany(
            "INSERT INTO engine.companion_memories (user_id, content, category, importance,"
            " embedding, embedding_model) VALUES (%s, %s, %s, 0.5, %s::vector, %s)",
            [(user, content, cat, "[" + ",".join(f"{x:.6f}" for x in v / np.linalg.norm(v))
              + "]", EMBEDDING_MODEL) for content, cat, v in rows])
