"""The scale population of ``bench/fused_bench.py`` (``--background-memories N
--background-turns M``): one heavy user among many, in tables of the issue's size (issue 31:
recall p99 ≤ 25 ms for a heavy user at 1M memories + 5M turn vectors).

Why server-side: 5M turns are 5M ``chat_messages`` rows and 5M half-precision vectors (~6 GB);
sending them from Python row by row would take longer than the measurement. Every row is made
by ``INSERT … SELECT`` over ``generate_series``: the other users' vectors are drawn from a pool
of random unit vectors (they are never read by the heavy user's recall, only sized like real
ones), the heavy user's are distinct random unit vectors sent once. The heavy user's rows are
spread over the heap as production interleaves them (their sessions at random positions among
everyone's; every Nth memory theirs), not packed at the end where a recall would read few pages.

Load order, as a bulk load would be done: the secondary indexes of the memory, sketch and turn
tables are dropped, the rows written (the ``chat_messages`` seq trigger and the foreign-key
checks off for the turns and messages — consistent by construction — the memory triggers on,
so ``memory_sketches`` is the mirror production keeps), the indexes rebuilt from their own
definitions, ``VACUUM ANALYZE``. The HNSW index over memories is rebuilt only with ``hnsw=True``
(19 min for 1M rows on this machine): no strategy reads it under the default
RECALL_QUANTIZED_SCAN.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, text

from eros.db.schema import hnsw_index_sql
from eros.memory.db.write_sql import Float4Array

#: turns per session (the other users' and the heavy user's)
SESSION_TURNS = 50
#: distinct vectors the other users' rows are drawn from
POOL = 4096
_TABLES = ("engine.companion_memories", "engine.memory_sketches", "engine.memory_turns",
           "engine.chat_messages")
_HNSW = "ix_companion_memories_embedding_hnsw"


@dataclass(frozen=True)
class Scale:
    users: int
    memories: int          # every user's, the heavy user's included
    turns: int             # every user's, the heavy user's included
    heavy_memories: int
    heavy_turns: int
    cite: int
    hnsw: bool = False

    def params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _vectors(conn: Connection, table: str, typ: str, vectors: np.ndarray) -> None:
    """``table (ord int, v typ)`` holding ``vectors`` (ord from 1), sent as one float array."""
    conn.execute(text(f"CREATE UNLOGGED TABLE {table} (ord int PRIMARY KEY, v {typ})"))
    dim = vectors.shape[1]
    for start in range(0, len(vectors), 5000):
        chunk = vectors[start:start + 5000]
        conn.execute(text(
            f"INSERT INTO {table} SELECT :o + g, CAST(f.v[(g - 1) * :d + 1 : g * :d] AS {typ})"
            " FROM generate_series(1, :n) g, (SELECT CAST(:flat AS real[]) AS v) f"),
            {"o": start, "d": dim, "n": len(chunk), "flat": Float4Array(chunk.ravel().tolist())})


def _units(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def _secondary_indexes(conn: Connection) -> list[tuple[str, str]]:
    """(name, definition) of every index of the loaded tables but primary keys and uniques."""
    return [(r.indexname, r.indexdef) for r in conn.execute(text(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i"
        " JOIN pg_class c ON c.relname = i.indexname"
        " JOIN pg_index x ON x.indexrelid = c.oid"
        " WHERE i.schemaname = 'engine' AND NOT x.indisunique"
        " AND i.schemaname || '.' || i.tablename = ANY(:t)"), {"t": list(_TABLES)})]


def insert_memories(conn: Connection, scale: Scale, now: datetime, total_turns: int) -> None:
    """Every user's memories (``bench_heavy_mem``, ``bench_pool``, ``bench_users`` and
    ``bench_heavy_seqs`` loaded): every stride-th memory is the heavy user's, and its
    category, age and importance are keyed by its own number (so the heavy user has every
    category and age); memories cite turns of their own user (the heavy user's: ``cite`` of
    theirs, a tenth labelled, a tenth superseded)."""
    conn.execute(text(
        "INSERT INTO engine.companion_memories (user_id, content, category, importance,"
        " embedding, created_at, status, sensitivity, source_seqs)"
        " SELECT u.id, 'memory ' || g,"
        "   (ARRAY['fact','preference','event','emotion','relation'])[1 + x.key % 5],"
        "   0.05 + (x.key % 19) / 20.0,"
        "   COALESCE(hm.v, p.v), CAST(:now AS timestamptz) - (x.key % 400) * interval '1 day',"
        "   CASE WHEN hm.ord IS NOT NULL THEN"
        "          CASE WHEN hm.ord % 10 = 5 THEN 'superseded' ELSE 'current' END"
        "        WHEN g % 20 = 7 THEN 'superseded' WHEN g % 20 = 8 THEN 'merged'"
        "        ELSE 'current' END,"
        "   CASE WHEN hm.ord % 10 = 0 THEN 'health' END,"
        "   CASE WHEN hm.ord IS NOT NULL AND :cite > 0 THEN (SELECT array_agg(DISTINCT hs.seq)"
        "          FROM generate_series(1, :cite) k JOIN public.bench_heavy_seqs hs"
        "            ON hs.ord = 1 + ((hm.ord * 7919 + k * 104729) % :ht))"
        "        WHEN hm.ord IS NULL THEN ARRAY[1 + (g * 7919) % :nt, 1 + (g * 104729) % :nt]"
        "   END"
        "   FROM generate_series(1, CAST(:m AS bigint)) g"
        "   LEFT JOIN public.bench_heavy_mem hm ON g % :stride = 0 AND hm.ord = g / :stride"
        "   CROSS JOIN LATERAL (SELECT COALESCE(hm.ord, g) AS key) x"
        "   JOIN public.bench_pool p ON p.ord = 1 + g % :pool"
        "   JOIN public.bench_users u ON u.u = CASE WHEN hm.ord IS NOT NULL THEN 0"
        "        ELSE 1 + (g * 31) % (:users - 1) END"),
        {"now": now, "cite": scale.cite, "ht": scale.heavy_turns, "nt": total_turns,
         "m": scale.memories, "stride": max(1, scale.memories // scale.heavy_memories),
         "pool": POOL, "users": max(2, scale.users)})


def load(engine: Engine, scale: Scale, user: uuid.UUID, dim: int, seed: int,
         log: Any = print) -> dict[str, float]:
    """Fill the (freshly migrated) database; returns seconds per step."""
    rng = np.random.default_rng(seed)
    timings: dict[str, float] = {}
    heavy_sessions = -(-scale.heavy_turns // SESSION_TURNS)
    other_sessions = -(-(scale.turns - scale.heavy_turns) // SESSION_TURNS)
    now = datetime.now(UTC)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        t = time.monotonic()
        indexes = _secondary_indexes(conn)
        for name, _ in indexes:
            conn.execute(text(f"DROP INDEX engine.{name}"))
        _vectors(conn, "public.bench_pool", "vector", _units(rng, POOL, dim))
        _vectors(conn, "public.bench_heavy_mem", "vector", _units(rng, scale.heavy_memories, dim))
        _vectors(conn, "public.bench_heavy_turn", "halfvec", _units(rng, scale.heavy_turns, dim))
        conn.execute(text(
            "CREATE UNLOGGED TABLE public.bench_users AS SELECT g AS u,"
            " CASE WHEN g = 0 THEN CAST(:heavy AS uuid) ELSE gen_random_uuid() END AS id"
            " FROM generate_series(0, :n - 1) g"), {"heavy": user, "n": scale.users})
        conn.execute(text("SELECT setseed(0.31)"))
        conn.execute(text("SET work_mem = '256MB'"))  # one-batch hash joins keep seq order
        # sessions at random positions: the heavy user's spread among everyone's
        conn.execute(text(
            "CREATE UNLOGGED TABLE public.bench_sessions AS"
            " SELECT row_number() OVER (ORDER BY random()) - 1 AS o, gen_random_uuid() AS id, u"
            " FROM (SELECT 0 AS u FROM generate_series(1, :h)"
            "       UNION ALL SELECT 1 + (g * 7919) % (:n - 1) FROM generate_series(1, :b) g) s"),
            {"h": heavy_sessions, "b": other_sessions, "n": max(2, scale.users)})
        conn.execute(text(
            "INSERT INTO engine.chat_sessions (id, user_id, last_active_at, last_seq)"
            " SELECT s.id, u.id, now(), (s.o + 1) * :k FROM public.bench_sessions s"
            " JOIN public.bench_users u USING (u)"), {"k": SESSION_TURNS})
        timings["setup_s"] = time.monotonic() - t
        t = time.monotonic()
        total_turns = (heavy_sessions + other_sessions) * SESSION_TURNS
        conn.execute(text("SET session_replication_role = replica"))  # seq trigger, FKs off
        conn.execute(text("SET maintenance_work_mem = '2GB'"))
        conn.execute(text(
            "INSERT INTO engine.chat_messages (session_id, role, content, sent_at, seq)"
            " SELECT s.id, 'user', 'turn ' || g, CAST(:now AS timestamptz)"
            "        - (:n - g) * interval '30 seconds', g"
            "   FROM generate_series(1, :n) g JOIN public.bench_sessions s"
            "     ON s.o = (g - 1) / :k"),
            {"n": total_turns, "k": SESSION_TURNS, "now": now})
        conn.execute(text(
            "SELECT setval(pg_get_serial_sequence('engine.chat_messages', 'seq'), :n)"),
            {"n": total_turns})
        log(f"  {total_turns:,} chat_messages in {time.monotonic() - t:.0f} s")
        # the heavy user's turns, numbered in seq order: their vectors' ord
        conn.execute(text(
            "CREATE UNLOGGED TABLE public.bench_heavy_seqs AS SELECT m.seq,"
            " row_number() OVER (ORDER BY m.seq) AS ord FROM engine.chat_messages m"
            " JOIN public.bench_sessions s ON s.id = m.session_id WHERE s.u = 0"))
        conn.execute(text("DELETE FROM public.bench_heavy_seqs WHERE ord > :t"),
                     {"t": scale.heavy_turns})
        conn.execute(text(
            "INSERT INTO engine.memory_turns (seq, session_id, user_id, instance_id, said_at,"
            " embedding, embedding_model, sensitivity, status)"
            " SELECT m.seq, m.session_id, u.id, NULL, m.sent_at,"
            "        COALESCE(hv.v, CAST(p.v AS halfvec)), 'bench-random',"
            "        NULL, 'current'"
            "   FROM engine.chat_messages m JOIN public.bench_sessions s ON s.id = m.session_id"
            "   JOIN public.bench_users u ON u.u = s.u"
            "   JOIN public.bench_pool p ON p.ord = 1 + m.seq % :pool"
            "   LEFT JOIN public.bench_heavy_seqs h ON h.seq = m.seq"
            "   LEFT JOIN public.bench_heavy_turn hv ON hv.ord = h.ord"
            "  WHERE s.u <> 0 OR h.seq IS NOT NULL"), {"pool": POOL})
        conn.execute(text("RESET session_replication_role"))
        timings["turns_s"] = time.monotonic() - t
        log(f"  turns indexed in {timings['turns_s']:.0f} s")
        t = time.monotonic()
        insert_memories(conn, scale, now, total_turns)
        timings["memories_s"] = time.monotonic() - t
        log(f"  {scale.memories:,} memories in {timings['memories_s']:.0f} s")
        t = time.monotonic()
        for name, definition in indexes:
            if name == _HNSW and not scale.hnsw:
                continue
            conn.execute(text(definition))
        if scale.hnsw and _HNSW not in dict(indexes):  # absent where no plan reads it (0030)
            conn.execute(text(hnsw_index_sql()))
        timings["indexes_s"] = time.monotonic() - t
        log(f"  indexes rebuilt in {timings['indexes_s']:.0f} s")
        t = time.monotonic()
        for table in (*_TABLES, "engine.chat_sessions"):
            conn.execute(text(f"VACUUM ANALYZE {table}"))
        timings["vacuum_s"] = time.monotonic() - t
        for table in ("bench_pool", "bench_heavy_mem", "bench_heavy_turn", "bench_sessions",
                      "bench_heavy_seqs"):
            conn.execute(text(f"DROP TABLE public.{table}"))
    return timings


def heavy_counts(engine: Engine, user: uuid.UUID) -> tuple[int, int, int, int]:
    """(the heavy user's memories, turns; every memory, every turn) as loaded."""
    with engine.connect() as conn:
        return tuple(int(x) for x in conn.execute(text(  # type: ignore[return-value]
            "SELECT (SELECT count(*) FROM engine.companion_memories WHERE user_id = :u),"
            " (SELECT count(*) FROM engine.memory_turns WHERE user_id = :u),"
            " (SELECT count(*) FROM engine.companion_memories),"
            " (SELECT count(*) FROM engine.memory_turns)"), {"u": user}).one())


def warm(engine: Engine, user: uuid.UUID) -> None:
    """Read the heavy user's heap pages and index ranges into shared_buffers: an active user's
    rows are hot on a serving primary; a freshly built bench database is not."""
    with engine.connect() as conn, conn.begin():
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        for sql in (
            "SELECT count(*) FROM engine.companion_memories WHERE user_id = :u"
            " AND length(content) >= 0 AND embedding IS NOT NULL",
            "SELECT count(*) FROM engine.memory_turns WHERE user_id = :u"
            " AND embedding IS NOT NULL AND said_at IS NOT NULL",
            "SELECT count(*) FROM engine.memory_sketches WHERE user_id = :u",
            "SELECT count(*) FROM engine.chat_messages m JOIN engine.memory_turns t"
            " ON t.seq = m.seq WHERE t.user_id = :u AND length(m.content) >= 0",
            "SELECT count(*) FROM engine.companion_memories WHERE source_seqs && ARRAY("
            "SELECT seq FROM engine.memory_turns WHERE user_id = :u)"):
            conn.execute(text(sql), {"u": user})
