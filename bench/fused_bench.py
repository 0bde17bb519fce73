"""Recall latency of ``fused`` beside ``composite`` for one heavy user (issue 31's cost target):
``python -m bench.fused_bench [--memories 10000] [--turns 20000] [--queries 200] [--cite N]
[--json F]``.

One user with M memories and T indexed turns (random unit vectors; the turns through
``turns_sql.write_turns``, as the product writes them), asked Q random queries with each
strategy in turn on the same connection pool; p50 / p95 / p99 of ``recall_by_vector``'s
wall time, and the ratio fused / composite. ``--cite N``: each memory cites N of the user's
turns (``source_seqs``, as extraction writes them; a tenth labelled, a tenth superseded), so
fused's provenance read (stale turns, inherited labels) and its lifted quotes have something
to read; 0 (the default) as before. Uses ``EROS_BENCH_DATABASE_URL`` (a scratch
database is created and dropped) or an embedded PostgreSQL. Prints a table; records nothing.
This is one heavy user in a small table, not the issue's 1M memories + 5M turn vectors.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine, text

from bench.claim_bench import scratch_database
from eros.db import turns_sql
from eros.services.recall import recall_by_vector
from eros.settings import load_settings

DIM = 512


def _units(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _load(url: str, user: uuid.UUID, memories: int, turns: int, seed: int,
          cite: int = 0) -> None:
    rng = np.random.default_rng(seed)
    engine = create_engine(url)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        mv = _units(rng, memories)
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, importance,"
            " embedding, created_at) VALUES (:u, :c, 'fact', 0.5, CAST(:v AS vector), :at)"),
            [{"u": user, "c": f"memory {i}", "v": "[" + ",".join(map(str, mv[i])) + "]",
              "at": now - timedelta(days=i % 400)} for i in range(memories)])
        sid = uuid.uuid4()
        conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id, last_active_at) "
                          "VALUES (:s, :u, now())"), {"s": sid, "u": user})
        seqs = [int(r[0]) for r in conn.execute(text(
            "INSERT INTO engine.chat_messages (session_id, role, content, sent_at) "
            "SELECT :s, 'user', 'turn ' || g, now() - g * interval '1 hour' "
            "FROM generate_series(1, :n) g RETURNING seq"), {"s": sid, "n": turns})]
        if cite:  # each memory cites `cite` turns; a tenth of them labelled, a tenth replaced
            conn.execute(text(
                "UPDATE engine.companion_memories m SET source_seqs = (SELECT array_agg("
                " DISTINCT (CAST(:seqs AS bigint[]))[1 + ((c.n * 7919 + k * 104729) % :t)])"
                " FROM generate_series(1, :c) k),"
                " sensitivity = CASE WHEN c.n % 10 = 0 THEN 'health' END,"
                " status = CASE WHEN c.n % 10 = 5 THEN 'superseded' ELSE 'current' END"
                " FROM (SELECT id, row_number() OVER (ORDER BY id) AS n"
                "       FROM engine.companion_memories WHERE user_id = :u) c"
                " WHERE m.id = c.id"), {"seqs": seqs, "t": turns, "c": cite, "u": user})
        tv = _units(rng, turns)
        for start in range(0, turns, 1000):
            turns_sql.write_turns(conn, [
                turns_sql.TurnRow(seq, sid, user, None, now - timedelta(hours=i),
                                  tv[i].tolist(), "bench-random")
                for i, seq in enumerate(seqs[start:start + 1000], start=start)])
    if cite:  # the statistics autovacuum would have gathered by the time anyone recalls
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text(
                "VACUUM ANALYZE engine.companion_memories, engine.memory_turns"))
    engine.dispose()


def run(url: str, memories: int, turns: int, queries: int, seed: int = 31,
        cite: int = 0) -> dict[str, Any]:
    user = uuid.uuid4()
    t = time.perf_counter()
    _load(url, user, memories, turns, seed, cite)
    load_s = time.perf_counter() - t
    settings = load_settings(database_url=url, embedding_dim=DIM)
    engine = create_engine(url, pool_size=2)
    qs = _units(np.random.default_rng(seed + 1), queries)
    out: dict[str, Any] = {"memories": memories, "turns": turns, "queries": queries,
                           "cite": cite, "load_secs": round(load_s, 2), "strategies": {}}
    try:
        for strategy in ("composite", "fused"):
            recall_by_vector(engine, user, qs[0].tolist(), strategy=strategy,  # warm-up
                             settings=settings)
            times = []
            for q in qs:
                t = time.perf_counter()
                recall_by_vector(engine, user, q.tolist(), strategy=strategy,
                                 settings=settings)
                times.append((time.perf_counter() - t) * 1000)
            times.sort()
            out["strategies"][strategy] = {
                "p50_ms": round(statistics.median(times), 2),
                "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2),
                "p99_ms": round(times[min(len(times) - 1, int(0.99 * len(times)))], 2)}
    finally:
        engine.dispose()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--turns", type=int, default=20_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--cite", type=int, default=0,
                   help="turns each memory cites (source_seqs); 0: none, as before")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    with scratch_database() as url:
        result = run(url, args.memories, args.turns, args.queries, cite=args.cite)
    s = result["strategies"]
    print(f"one user, {args.memories} memories, {args.turns} turns, {args.queries} queries, "
          f"{args.cite} cited turns a memory (load {result['load_secs']} s)")
    print(f"{'strategy':<10} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, row in s.items():
        print(f"{name:<10} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['p99_ms']:>8}")
    print(f"fused / composite p50: {s['fused']['p50_ms'] / s['composite']['p50_ms']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
