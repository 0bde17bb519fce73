"""Recall on a streaming read replica against recall on the primary, same data, same run
(issue 27).

Method: the recall bench's setup (bench/recall_setup.py: a tuned embedded PostgreSQL, the
memories bulk-loaded, indexes built, the heavy users clustered, heap and btrees warmed), then
a streaming replica of that server (``pg_basebackup -R``, its own port and socket; it inherits
the primary's ``shared_buffers``), warmed the same way once it has replayed everything. Each
query runs ``recall_by_vector`` twice in a rotating order (paired samples): once with only
DATABASE_URL set (the **primary**, the baseline) and once with DATABASE_REPLICA_URL set
(**replica**: includes the replay-lag check, one extra round trip per recall). Times are client
wall time of the whole call; "answered by" counts which database answered: a replica-mode
recall answered by the primary is a fallback. The lag check is conservative: WAL in flight
(autovacuum's, say) after a spell without commits reads as lag of the whole spell, so a quiet
primary gets some recalls back — counted as ``lag``, and cheap, since the primary is quiet.
Each group starts right after a commit replayed by the replica.

    .venv/bin/python -m bench.recall_replica_bench [--memories 100000] [--users 1000]
        [--heavy 10000] [--queries 300] [--warmup 200] [--no-record] [--json F]

Without a target in the issue beyond "report it": the replica should cost about what the
primary does (same plan, one extra round trip).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from bench import recall_data as rd
from bench.claim_bench import machine
from bench.drain_support import machine_busy
from bench.recall_setup import (
    DB,
    bench_server,
    cluster_heavy,
    database_url,
    drop_database,
    population,
    prepare,
    warm,
)
from eros.db.engine import get_replica_engine, make_engine
from eros.recall import recall_by_vector
from eros.recall.services import read_route
from eros.settings import Settings, load_settings
from testkit.topology import replica_heartbeat, streaming_replica

ROOT = Path(__file__).resolve().parent
MODES = ("primary", "replica")


@dataclass
class Samples:
    times: list[float] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)
    rows: list[int] = field(default_factory=list)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def run_queries(engine: Engine, pop: rd.Population, users: list[int], n: int,
                configs: dict[str, Settings], seed: int) -> dict[str, Samples]:
    rng = random.Random(seed)
    out = {m: Samples() for m in MODES}
    for i in range(n):
        user = users[i % len(users)]
        q = rd.query_vectors(pop, user, 1, seed * 100003 + i)[0]
        order = list(MODES)
        rng.shuffle(order)
        for mode in order:
            started = time.perf_counter()
            result = recall_by_vector(engine, pop.user_ids[user], q,
                                      instance_id=pop.instances[user][0], scope="both",
                                      settings=configs[mode])
            out[mode].times.append((time.perf_counter() - started) * 1000)
            out[mode].sources[result.source] += 1
            out[mode].rows.append(len(result.memories))
    return out


def table(groups: dict[str, dict[str, Samples]]) -> str:
    lines = ["| users | database | median ms | p99 ms | median / primary | p99 / primary |"
             " answered by |", "|---|---|---:|---:|---:|---:|---|"]
    for group, samples in groups.items():
        base = samples["primary"]
        b_med, b_p99 = statistics.median(base.times), p99(base.times)
        for mode, s in samples.items():
            med, q99 = statistics.median(s.times), p99(s.times)
            answered = ", ".join(f"{k} {v}" for k, v in sorted(s.sources.items()))
            lines.append(f"| {group} | {mode} | {med:.2f} | {q99:.2f} | {med / b_med:.2f} |"
                         f" {q99 / b_p99:.2f} | {answered} |")
    return "\n".join(lines)


def summary(groups: dict[str, dict[str, Samples]]) -> dict[str, Any]:
    return {g: {m: {"queries": len(s.times), "median_ms": statistics.median(s.times),
                    "p99_ms": p99(s.times), "sources": dict(s.sources),
                    "rows_mean": statistics.fmean(s.rows)} for m, s in samples.items()}
            for g, samples in groups.items()}


def write_results(command: str, info: dict[str, Any], body: str) -> None:
    """Append under ``## Recall on a read replica`` in bench/RESULTS.md."""
    path = ROOT / "RESULTS.md"
    existing = path.read_text() if path.exists() else "# Benchmark results\n"
    title = "\n## Recall on a read replica\n"
    entry = (f"\n### {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n`{command}`\n\n"
             f"machine: {info['nproc']} × {info['cpu']}, {info['ram_gib']} GiB RAM; "
             f"PostgreSQL {info.get('postgres', '?')}, shared_buffers "
             f"{info.get('shared_buffers', '?')} on both; while measuring, all processes kept "
             f"{info.get('busy_cores', '?')} of {info['nproc']} cores busy\n\n{body}\n")
    if title not in existing:
        path.write_text(existing.rstrip("\n") + "\n" + title + entry)
        return
    head, tail = existing.split(title, 1)
    nxt = tail.find("\n## ")
    section, rest = (tail, "") if nxt < 0 else (tail[:nxt], tail[nxt:])
    path.write_text(head + title + section.rstrip("\n") + "\n" + entry + rest)


def _caught_up(primary: Engine, replica: Engine, timeout: float = 300) -> None:
    """Commit a transaction on the primary and wait until the replica has replayed it: its
    last replayed commit is then fresh (a replica that has replayed no commit since it started
    cannot date its lag, and recall counts it as lagging while any WAL is in flight)."""
    with primary.begin() as conn:
        conn.execute(text("SELECT pg_current_xact_id()"))  # an xid, so a commit record
    with primary.connect() as conn:
        lsn = conn.execute(text("SELECT pg_current_wal_lsn()")).scalar_one()
    deadline = time.monotonic() + timeout
    while True:
        with replica.connect() as conn:
            if conn.execute(text("SELECT pg_last_wal_replay_lsn() >= CAST(:l AS pg_lsn)"),
                            {"l": lsn}).scalar_one():
                return
        if time.monotonic() > deadline:
            raise TimeoutError("the replica did not catch up")
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_replica_bench",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--heavy", default="10000", help="memories of each heavy user")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--queries", type=int, default=300, help="per user group")
    parser.add_argument("--warmup", type=int, default=200, help="warm-up queries")
    parser.add_argument("--shared-buffers", default="512MB")
    parser.add_argument("--maintenance-work-mem", default="1GB")
    parser.add_argument("--no-record", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args(argv)
    heavy, params, pop = population(args)
    info = machine()
    base_cfg = load_settings(embedding_dim=args.dim)
    with bench_server(None, args.shared_buffers, False) as server_url:
        prepare(server_url, pop, params, args.maintenance_work_mem)
        primary_url = database_url(server_url)
        engine = make_engine(primary_url, pool_size=2, settings=base_cfg)
        try:
            with engine.connect() as conn:
                info["postgres"] = conn.execute(text("SHOW server_version")).scalar_one()
                info["shared_buffers"] = conn.execute(text("SHOW shared_buffers")).scalar_one()
            print("clustering the heavy users …", flush=True)
            cluster_heavy(engine, base_cfg, [pop.user_ids[u] for u in range(len(heavy))])
            info["warmed_mb"] = warm(engine)
            print("starting the streaming replica …", flush=True)
            # the primary's replica heartbeat, as beat writes it in production (issue 32)
            with streaming_replica(server_url) as replica, replica_heartbeat(primary_url):
                configs = {"primary": base_cfg, "replica": base_cfg.model_copy(update={
                    "database_replica_url": replica.url(DB)})}
                read_route.forget_failures()
                replica_engine = get_replica_engine(configs["replica"])
                assert replica_engine is not None
                _caught_up(engine, replica_engine)
                warm(replica_engine)
                light = list(range(len(heavy), args.users))
                random.Random(3).shuffle(light)
                heavy_users = list(range(len(heavy)))
                print("warming up …", flush=True)
                run_queries(engine, pop, heavy_users + light[:200], args.warmup, configs, 99)
                print("measuring …", flush=True)
                _caught_up(engine, replica_engine)
                busy_before, wall_before = machine_busy(), time.monotonic()
                groups = {"light": run_queries(engine, pop, light, args.queries, configs, 1)}
                _caught_up(engine, replica_engine)
                groups["heavy"] = run_queries(engine, pop, heavy_users, args.queries, configs, 2)
                info["busy_cores"] = round((machine_busy() - busy_before)
                                           / (time.monotonic() - wall_before), 2)
                replica_engine.dispose()
        finally:
            engine.dispose()
            drop_database(server_url)
    body = (f"{args.memories:,} memories × {args.dim} dims, {args.users:,} users (heavy "
            f"{', '.join(f'{h:,}' for h in heavy)}), the recall bench's data and setup; the "
            f"replica a `pg_basebackup -R` of the server on the same machine, warmed alike. "
            f"{args.queries} queries per group, RECALL_STRATEGY {base_cfg.recall_strategy}, "
            f"paired (both databases per query, rotating order); the replica's time includes "
            f"its lag check.\n\n" + table(groups))
    print(body)
    print(f"\nmachine: {info}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": info, "groups": summary(groups),
                                         "database": str(make_url(primary_url).database)},
                                        indent=2))
    if not args.no_record:
        given = sys.argv[1:] if argv is None else argv
        write_results((".venv/bin/python -m bench.recall_replica_bench " + " ".join(given))
                      .strip(), info, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
