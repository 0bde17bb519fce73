"""Synthetic memories for the recall benchmark, generated with numpy and loaded by binary COPY.

Why not uniform random vectors: real embeddings cluster by topic, and uniformly random 512-d
vectors are the HNSW worst case (every point nearly equidistant). Each memory is
``normalise(topic centroid + noise)`` (cosine ≈ 0.7 to its centroid); topics have a Zipf-like
popularity shared by every user, so a query's neighbourhood is full of *other* users' memories
— the hard case for a per-user filter — and a query is another noisy sample of one of the
user's own topics. Rows are shuffled across users before loading, as memories arrive
interleaved in production: a heavy user's rows are spread over the whole heap.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg

CATEGORIES = ("fact", "preference", "event", "emotion", "relation")
CATEGORY_P = (0.30, 0.25, 0.20, 0.15, 0.10)
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_NULL = struct.pack(">i", -1)


@dataclass(frozen=True)
class Population:
    """Who owns what: user ids, their persona instances and topics, row → user mapping."""

    user_ids: list[uuid.UUID]
    instances: list[list[uuid.UUID]]
    topics: list[np.ndarray]          # per user: indices into the centroid table
    counts: np.ndarray                # memories per user
    centroids: np.ndarray             # (n_topics, dim) unit vectors
    heavy: list[int]                  # indices of the heavy users
    noise: float


def make_population(memories: int, users: int, heavy_sizes: list[int], dim: int, *,
                    seed: int = 5, n_topics: int = 2000) -> Population:
    """Heavy users get exactly their sizes; the rest share what is left, log-normally."""
    rng = np.random.default_rng(seed)
    heavy_total = sum(heavy_sizes)
    if heavy_total >= memories or len(heavy_sizes) >= users:
        raise ValueError("heavy users must leave room for the light ones")
    light = users - len(heavy_sizes)
    weights = rng.lognormal(0.0, 0.8, light)
    light_counts = np.maximum(1, np.floor(weights / weights.sum() * (memories - heavy_total)))
    light_counts = light_counts.astype(np.int64)
    light_counts[: memories - heavy_total - int(light_counts.sum())] += 1  # exact total
    shortfall = memories - heavy_total - int(light_counts.sum())
    light_counts[np.argmax(light_counts)] += shortfall
    counts = np.concatenate([np.array(heavy_sizes, dtype=np.int64), light_counts])
    centroids = rng.standard_normal((n_topics, dim)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    # Zipf-like topic popularity shared by everyone: many users talk about work, family and
    # where they live, so a query's neighbourhood is full of *other* users' memories and a
    # user's share of it is about their share of the table (the hard case for filtered HNSW).
    popularity = 1.0 / (np.arange(n_topics) + 10.0)
    popularity /= popularity.sum()
    topics = [rng.choice(n_topics, size=50 if i < len(heavy_sizes) else 12, replace=False,
                         p=popularity) for i in range(users)]
    instances = [[uuid.UUID(bytes=rng.bytes(16), version=4)
                  for _ in range(int(rng.integers(1, 4)))] for _ in range(users)]
    user_ids = [uuid.UUID(bytes=rng.bytes(16), version=4) for _ in range(users)]
    return Population(user_ids, instances, topics, counts, centroids,
                      list(range(len(heavy_sizes))), noise=1.0 / np.sqrt(dim))


def noisy(pop: Population, topic_idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors at cosine ≈ 0.7 from their topic centroids."""
    vec = pop.centroids[topic_idx] + rng.standard_normal(
        (len(topic_idx), pop.centroids.shape[1])).astype(np.float32) * np.float32(pop.noise)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    out: np.ndarray = vec
    return out


def query_vectors(pop: Population, user: int, n: int, seed: int) -> list[list[float]]:
    """Queries a user might send: noisy samples of that user's own topics."""
    rng = np.random.default_rng(seed)
    return [v.tolist() for v in noisy(pop, rng.choice(pop.topics[user], n), rng)]


def _rows_binary(pop: Population, owners: np.ndarray, rng: np.random.Generator,
                 now: datetime) -> bytes:
    """One chunk of COPY BINARY tuples (no header): 8 fields per memory row."""
    n = len(owners)
    topic = np.array([pop.topics[u][rng.integers(len(pop.topics[u]))] for u in owners])
    vectors = noisy(pop, topic, rng).astype(">f4")
    cats = rng.choice(len(CATEGORIES), n, p=CATEGORY_P)
    importance = rng.uniform(0.05, 1.0, n)
    no_importance = rng.random(n) < 0.1
    age_us = (rng.uniform(0, 730, n) * 86400e6).astype(np.int64)
    relationship = rng.random(n) < 0.5
    status = rng.choice(3, n, p=(0.9, 0.05, 0.05))
    base_us = int((now - _PG_EPOCH) / timedelta(microseconds=1))
    statuses = (b"current", b"merged", b"superseded")
    cat_bytes = [c.encode() for c in CATEGORIES]
    vec_head = struct.pack(">iHH", 4 + 4 * vectors.shape[1], vectors.shape[1], 0)
    parts: list[bytes] = []
    field_count = struct.pack(">h", 8)
    for i in range(n):
        u = int(owners[i])
        content = f"memory {u}-{i} topic {topic[i]}".encode()
        inst = (b"\x00\x00\x00\x10" + pop.instances[u][i % len(pop.instances[u])].bytes
                if relationship[i] else _NULL)
        imp = _NULL if no_importance[i] else struct.pack(">id", 8, float(importance[i]))
        cat = cat_bytes[cats[i]]
        st = statuses[status[i]]
        parts.append(b"".join((
            field_count,
            b"\x00\x00\x00\x10", pop.user_ids[u].bytes,
            inst,
            struct.pack(">i", len(content)), content,
            struct.pack(">i", len(cat)), cat,
            imp,
            struct.pack(">iq", 8, base_us - int(age_us[i])),
            struct.pack(">i", len(st)), st,
            vec_head, vectors[i].tobytes(),
        )))
    return b"".join(parts)


def _owner_chunks(pop: Population, chunk: int, seed: int) -> Iterator[np.ndarray]:
    owners = np.repeat(np.arange(len(pop.counts)), pop.counts)
    np.random.default_rng(seed).shuffle(owners)
    for start in range(0, len(owners), chunk):
        yield owners[start:start + chunk]


def load(conninfo: str, pop: Population, *, seed: int = 11, chunk: int = 50_000,
         progress: bool = True) -> None:
    """COPY every memory into engine.companion_memories (binary, one COPY, chunked writes)."""
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    total = int(pop.counts.sum())
    done = 0
    with psycopg.connect(conninfo) as conn, conn.cursor() as cur, cur.copy(
            "COPY engine.companion_memories (user_id, instance_id, content, category,"
            " importance, created_at, status, embedding) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(_COPY_HEADER)
        for owners in _owner_chunks(pop, chunk, seed):
            copy.write(_rows_binary(pop, owners, rng, now))
            done += len(owners)
            if progress:
                print(f"  loaded {done:,}/{total:,}", flush=True)
        copy.write(struct.pack(">h", -1))
