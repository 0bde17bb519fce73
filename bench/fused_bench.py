"""Recall latency of ``fused`` beside the memory strategies for one heavy user (issue 31's cost
target): ``python -m bench.fused_bench [--memories 10000] [--turns 20000] [--queries 200]
[--cite N] [--json F]``.

One user with M memories and T indexed turns (random unit vectors; the turns through
``turns_sql.write_turns``, as the product writes them), asked Q random queries with each
strategy in turn on the same connection pool; p50 / p95 / p99 of ``recall_by_vector``'s
wall time, and the ratio fused / composite. ``--cite N``: each memory cites N of the user's
turns (``source_seqs``, as extraction writes them; a tenth labelled, a tenth superseded), so
fused's provenance read (stale turns, inherited labels) and its lifted quotes have something
to read; 0 (the default) as before. Uses ``EROS_BENCH_DATABASE_URL`` (a scratch
database is created and dropped) or an embedded PostgreSQL. Prints a table; records nothing.
Without the scale flags this is one heavy user in a small table.

Scale (issue 31's cost target): ``--background-memories 1000000 --background-turns 5000000
[--users 10000] [--data-dir DIR --keep]`` puts the same heavy user among ``--users`` users in
tables of that size (the totals include the heavy user's rows), built server-side
(bench/fused_scale.py), on a server with ``--shared-buffers`` (an embedded one restarted with
it, or ``EROS_BENCH_DATABASE_URL``); the heavy user's memories are clustered into cells as beat
does for a user over RECALL_CELL_MIN_ROWS, and their rows read into shared buffers (an active
user's rows are hot). Every strategy is measured (``--strategies``), with a query text (the
product's recall passes one: fused's BM25 over the turns runs). ``--keep`` keeps the loaded
server for the next run with the same sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine, event, text

from bench import fused_scale
from bench.claim_bench import scratch_database
from eros.core.names import RECALL_STRATEGIES
from eros.recall.db import turns_sql
from eros.recall.services.recall import recall_by_vector
from eros.settings import load_settings

DIM = 512
#: what the product's recall passes with the vector (fused's BM25 over the turns reads it)
QUERY_TEXT = "what did I tell you about my sister and the trip"


def _units(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


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


class _Cpu:
    """CPU time this process and the engine's server backends spent (``/proc/<pid>/schedstat``,
    nanoseconds; a local server only). On a machine shared with other work, wall time is
    inflated by waiting for a core; the CPU a recall costs is not, and on an idle machine its
    wall time is about this plus the round trips' latency."""

    def __init__(self, engine: Any) -> None:
        self.pids: set[int] = set()

        @event.listens_for(engine, "connect")
        def _pid(dbapi_conn: Any, _record: Any) -> None:
            with dbapi_conn.cursor() as cur:
                cur.execute("SELECT pg_backend_pid()")
                self.pids.add(int(cur.fetchone()[0]))

    def ns(self) -> int | None:
        total = time.process_time_ns()
        for pid in self.pids:
            try:
                total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                return None  # a remote server, or a backend gone
        return total


def _percentiles(ts: list[float]) -> dict[str, float]:
    ts = sorted(ts)
    return {"p50_ms": round(statistics.median(ts), 2),
            "p95_ms": round(ts[min(len(ts) - 1, int(0.95 * len(ts)))], 2),
            "p99_ms": round(ts[min(len(ts) - 1, int(0.99 * len(ts)))], 2)}


def measure(engine: Any, user: uuid.UUID, queries: np.ndarray, strategies: list[str],
            settings: Any, query_text: str | None = None, cpu: _Cpu | None = None
            ) -> dict[str, dict[str, Any]]:
    """p50 / p95 / p99 of ``recall_by_vector``'s wall time per strategy (one warm-up call
    each), the strategies interleaved query by query (a noisy neighbour slows them alike);
    with ``cpu``, also the CPU each call cost (client and server)."""
    for strategy in strategies:
        recall_by_vector(engine, user, queries[0].tolist(), strategy=strategy,  # type: ignore[arg-type]
                         settings=settings, query_text=query_text)
    times: dict[str, list[float]] = {s: [] for s in strategies}
    cpus: dict[str, list[float]] = {s: [] for s in strategies}
    plans: dict[str, dict[str, int]] = {s: {} for s in strategies}
    for i, q in enumerate(queries):
        for strategy in strategies[i % len(strategies):] + strategies[:i % len(strategies)]:
            c0 = cpu.ns() if cpu else None
            t = time.perf_counter()
            result = recall_by_vector(engine, user, q.tolist(), strategy=strategy,  # type: ignore[arg-type]
                                      settings=settings, query_text=query_text)
            times[strategy].append((time.perf_counter() - t) * 1000)
            c1 = cpu.ns() if cpu else None
            if c0 is not None and c1 is not None:
                cpus[strategy].append((c1 - c0) / 1e6)
            plans[strategy][result.plan] = plans[strategy].get(result.plan, 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for strategy, ts in times.items():
        out[strategy] = {**_percentiles(ts), "plans": plans[strategy]}
        if len(cpus[strategy]) == len(ts):
            out[strategy]["cpu"] = _percentiles(cpus[strategy])
    return out


def run(url: str, memories: int, turns: int, queries: int, seed: int = 31,
        cite: int = 0, strategies: tuple[str, ...] = ("composite", "fused")) -> dict[str, Any]:
    user = uuid.uuid4()
    t = time.perf_counter()
    _load(url, user, memories, turns, seed, cite)
    load_s = time.perf_counter() - t
    settings = load_settings(database_url=url, embedding_dim=DIM)
    engine = create_engine(url, pool_size=2)
    qs = _units(np.random.default_rng(seed + 1), queries)
    out: dict[str, Any] = {"memories": memories, "turns": turns, "queries": queries,
                           "cite": cite, "load_secs": round(load_s, 2)}
    cpu = _Cpu(engine)
    try:
        out["strategies"] = measure(engine, user, qs, list(strategies), settings, cpu=cpu)
    finally:
        engine.dispose()
    return out


SCALE_DB = "eros_fused_scale"


def fused_scale_run(args: argparse.Namespace, strategies: tuple[str, ...]) -> dict[str, Any]:
    """The scale mode: load (or reuse a ``--keep`` run's) database, cluster and warm the heavy
    user, measure every strategy."""
    from sqlalchemy.engine import make_url

    from bench.recall_setup import bench_server
    from eros.db.migrate import upgrade
    from eros.recall.services import recall_cells, turn_centres

    scale = fused_scale.Scale(args.users, args.background_memories or args.memories,
                              args.background_turns or args.turns, args.memories, args.turns,
                              args.cite, args.hnsw)
    user = uuid.UUID(int=31)  # fixed: a kept database is reused by it
    out: dict[str, Any] = {"memories": args.memories, "turns": args.turns,
                           "queries": args.queries, "cite": args.cite, "users": args.users}
    with bench_server(args.data_dir, args.shared_buffers, args.keep) as server_url:
        url = make_url(server_url).set(database=SCALE_DB).render_as_string(hide_password=False)
        admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"),
                                  {"d": SCALE_DB}).scalar()
        meta: dict[str, Any] | None = None
        if exists:
            probe = create_engine(url)
            with probe.connect() as conn:
                if conn.execute(text("SELECT to_regclass('public.bench_meta')")).scalar():
                    meta = conn.execute(text("SELECT meta FROM public.bench_meta")).scalar()
            probe.dispose()
        if meta and meta.get("params") == scale.params():
            print("reusing the loaded database of a previous --keep run", flush=True)
            timings = meta["timings"]
            upgrade(url)  # a database kept by an older revision: this one's migrations
        else:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{SCALE_DB}" WITH (FORCE)'))
                conn.execute(text(f'CREATE DATABASE "{SCALE_DB}"'))
            upgrade(url)
            engine = create_engine(url)
            print(f"loading {scale} …", flush=True)
            timings = fused_scale.load(engine, scale, user, DIM, args.seed if hasattr(
                args, "seed") else 31)
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE public.bench_meta (meta jsonb)"))
                conn.execute(text("INSERT INTO public.bench_meta VALUES (CAST(:m AS jsonb))"),
                             {"m": json.dumps({"params": scale.params(), "timings": timings})})
            engine.dispose()
        admin.dispose()
        settings = load_settings(database_url=url, embedding_dim=DIM)
        engine = create_engine(url, pool_size=2)
        cpu = _Cpu(engine)
        try:
            report = recall_cells.cluster_user(engine, settings, user)
            out["centred_turns"] = turn_centres.ensure_centres(engine)  # as the finder does
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM ANALYZE engine.memory_sketches, engine.memory_turns"))
            fused_scale.warm(engine, user)
            counts = fused_scale.heavy_counts(engine, user)
            out.update({"heavy_memories": counts[0], "heavy_turns": counts[1],
                        "all_memories": counts[2], "all_turns": counts[3],
                        "load_secs": round(sum(timings.values()), 1), "timings": timings,
                        "cells": report.cells, "cluster": report.to_dict()})
            qs = _units(np.random.default_rng(32), args.queries)
            measure(engine, user, qs[: max(1, args.queries // 4)], list(strategies), settings,
                    QUERY_TEXT)  # warm-up: the pages the queries touch
            out["strategies"] = measure(engine, user, qs, list(strategies), settings,
                                        QUERY_TEXT, cpu)
        finally:
            engine.dispose()
            if not args.keep:
                with create_engine(server_url, isolation_level="AUTOCOMMIT").connect() as c:
                    c.execute(text(f'DROP DATABASE IF EXISTS "{SCALE_DB}" WITH (FORCE)'))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--turns", type=int, default=20_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--cite", type=int, default=0,
                   help="turns each memory cites (source_seqs); 0: none, as before")
    p.add_argument("--background-memories", type=int, default=0,
                   help="scale: every user's memories in the table (the heavy user's included)")
    p.add_argument("--background-turns", type=int, default=0,
                   help="scale: every user's indexed turns (the heavy user's included)")
    p.add_argument("--users", type=int, default=10_000, help="scale: users in the tables")
    p.add_argument("--strategies", default=None,
                   help="comma-separated (default: composite,fused; at scale every strategy)")
    p.add_argument("--shared-buffers", default="6GB")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--keep", action="store_true", help="scale: keep the loaded server")
    p.add_argument("--hnsw", action="store_true", help="scale: rebuild the memories' HNSW")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    scale = bool(args.background_memories or args.background_turns)
    strategies = tuple(args.strategies.split(",")) if args.strategies else (
        RECALL_STRATEGIES if scale else ("composite", "fused"))
    if scale:
        result = fused_scale_run(args, strategies)
        print(f"one user of {args.users:,}: {args.memories:,} of {result['all_memories']:,}"
              f" memories, {args.turns:,} of {result['all_turns']:,} turns, {args.queries}"
              f" queries, {args.cite} cited turns a memory (load {result['load_secs']} s)")
    else:
        with scratch_database() as url:
            result = run(url, args.memories, args.turns, args.queries, cite=args.cite,
                         strategies=strategies)
        print(f"one user, {args.memories} memories, {args.turns} turns, {args.queries} "
              f"queries, {args.cite} cited turns a memory (load {result['load_secs']} s)")
    s = result["strategies"]
    print(f"{'strategy':<10} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  "
          f"{'CPU p50':>8} {'CPU p95':>8} {'CPU p99':>8}  plans")
    for name, row in s.items():
        c = row.get("cpu", {})
        print(f"{name:<10} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['p99_ms']:>8}  "
              f"{c.get('p50_ms', '–'):>8} {c.get('p95_ms', '–'):>8} {c.get('p99_ms', '–'):>8}"
              f"  {row['plans']}")
    if "fused" in s and "composite" in s:
        print(f"fused / composite p50: {s['fused']['p50_ms'] / s['composite']['p50_ms']:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
