"""The drain through PgBouncer in transaction mode against the drain straight to PostgreSQL,
at the same concurrency, in the same run (issue 27).

Three drains of ``--rounds × --concurrency`` sessions each, one after another over the same
fake providers, PostgreSQL and Redis, each on a fresh clone: **direct** (the baseline: the
workers' own pools straight to PostgreSQL), **pgbouncer, no client pool**
(DATABASE_POOL_MODE=transaction, DATABASE_POOL_SIZE=0: a PgBouncer client connection per
transaction, the documented production setting) and **pgbouncer, client pool** (transaction
mode with the workers' default pools kept). PgBouncer (Debian's package) runs on a free port in
transaction mode with ``--bouncer-pool`` server connections. A watcher samples PostgreSQL's
client backends on the clone every 50 ms (the bench's own, ``application_name`` eros-bench,
left out) and reports the peak: what the workers cost PostgreSQL in connections.

    python -m bench.drain_bouncer [--pool gevent] [--concurrency 128] [--rounds 8]
        [--bouncer-pool 10] [--llm-ms 2000] [--embed-ms 100] [--modes direct,pgbouncer,pooled]
        [--repeat N] [--json F]

Target: through PgBouncer at most 10 % slower than direct (sessions per second, steady).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from sqlalchemy import create_engine, text

from bench.claim_bench import machine
from bench.drain_run import BENCH_APP, Result, environment, run_ours
from testkit.services import with_database
from testkit.topology import PgBouncer, pgbouncer

#: the issue's target: the drain through PgBouncer at most this much slower than direct
TARGET_SLOWDOWN = 0.10


class Watch:
    """Peak of PostgreSQL's client backends on one database, sampled every 50 ms from a
    connection to another database (never counted), the bench's own connections left out."""

    def __init__(self, server_url: str) -> None:
        self.engine = create_engine(with_database(server_url, "postgres"), pool_size=1)
        self.database: str | None = None
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def watch(self, database: str) -> None:
        self.database, self.peak = database, 0

    def _run(self) -> None:
        with self.engine.connect() as conn:
            while not self._stop.wait(0.05):
                if self.database is None:
                    continue
                n = int(conn.execute(text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = :d"
                    " AND backend_type = 'client backend' AND application_name <> :app"),
                    {"d": self.database, "app": BENCH_APP}).scalar_one())
                conn.rollback()
                self.peak = max(self.peak, n)

    @contextmanager
    def running(self) -> Iterator[Watch]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(timeout=10)
            self.engine.dispose()


def modes(bouncer: PgBouncer) -> list[tuple[str, Callable[[str], dict[str, str]] | None]]:
    def through(pool_size: str | None) -> Callable[[str], dict[str, str]]:
        def env(db_url: str) -> dict[str, str]:
            from sqlalchemy.engine import make_url

            out = {"DATABASE_URL": bouncer.url(str(make_url(db_url).database)),
                   "DATABASE_POOL_MODE": "transaction", "DATABASE_MIGRATE_URL": db_url}
            if pool_size is not None:
                out["DATABASE_POOL_SIZE"] = pool_size
            return out
        return env
    return [("direct", None), ("pgbouncer, no client pool", through("0")),
            ("pgbouncer, client pool", through(None))]


#: ``--modes`` names: direct, pgbouncer (no client pool), pooled (pgbouncer, client pool)
MODE_NAMES = {"direct": "direct", "pgbouncer": "pgbouncer, no client pool",
              "pooled": "pgbouncer, client pool"}


def report(rows: list[tuple[str, Result, int]], bouncer_pool: int, args: argparse.Namespace,
           info: dict[str, object]) -> str:
    """Every drain, then per mode the median steady rate of its drains against the median of
    the direct ones (with ``--repeat`` the modes alternate, so a noisy neighbour's spell
    lands on all of them)."""
    head = (f"{'round':>5} {'mode':<28} {'sessions':>8} {'wall s':>7} {'sess/s':>7} "
            f"{'steady':>7} {'pg conns':>8} {'pg CPU ms':>9} ok")
    lines = [head, "-" * len(head)]
    per_mode: dict[str, list[tuple[Result, int]]] = {}
    for i, (name, r, peak) in enumerate(rows):
        per_mode.setdefault(name, []).append((r, peak))
        lines.append(f"{i // max(1, len(set(n for n, _, _ in rows))) + 1:>5} {name:<28} "
                     f"{r.sessions:>8} {r.seconds:>7.1f} {r.sessions_per_s:>7.2f} "
                     f"{r.steady_per_s:>7.2f} {peak:>8} {r.cpu_ms.get('postgres', 0):>9.1f} "
                     f"{'yes' if r.verification.ok else 'NO'}")
    base = statistics.median(r.steady_per_s for r, _ in per_mode["direct"])
    verdicts = []
    for name, runs in per_mode.items():
        rate = statistics.median(r.steady_per_s for r, _ in runs)
        peak = max(p for _, p in runs)
        if name == "direct":
            verdicts.append(f"direct: median steady {rate:.2f}/s over {len(runs)} drain(s); "
                            f"PostgreSQL connections peak {peak}")
            continue
        ratio = rate / base if base else 0.0
        ok = ratio >= 1 - TARGET_SLOWDOWN
        verdicts.append(f"{name}: median steady {rate:.2f}/s, {100 * (1 - ratio):+.1f}% "
                        f"slower than direct (target <= {100 * TARGET_SLOWDOWN:.0f}%): "
                        f"{'PASS' if ok else 'MISS'}; PostgreSQL connections peak {peak} "
                        f"(PgBouncer pool {bouncer_pool})")
    return "\n".join([
        *lines, "",
        f"{args.pool} -c {args.concurrency} x {args.workers} worker(s), LLM {args.llm_ms:.0f} ms, "
        f"embedding {args.embed_ms:.0f} ms; steady = sessions/s between the 10th and 90th "
        "percentile finish; pg conns = peak client backends on the database (workers only); "
        "pg CPU = PostgreSQL's CPU ms per session",
        *verdicts, f"machine: {info}"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drain_bouncer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", choices=("prefork", "threads", "gevent"), default="gevent")
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=8,
                        help="sessions per drain = rounds x concurrency x workers")
    parser.add_argument("--bouncer-pool", type=int, default=10,
                        help="PgBouncer's server connections for the database")
    parser.add_argument("--llm-ms", type=float, default=2000.0)
    parser.add_argument("--embed-ms", type=float, default=100.0)
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--modes", default="direct,pgbouncer,pooled",
                        help="which drains, in order (direct is the baseline and comes first)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="drain every mode this many times, alternating")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--log-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    wanted = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not wanted or wanted[0] != "direct" or any(m not in MODE_NAMES for m in wanted):
        parser.error("--modes: a list of direct, pgbouncer, pooled starting with direct")
    sessions = args.rounds * args.concurrency * args.workers
    run_args = argparse.Namespace(
        **vars(args), sessions=sessions, db_pool=0, metrics=False,
        batch=max(100, 2 * args.concurrency * args.workers))
    info = machine()
    rows: list[tuple[str, Result, int]] = []
    with environment(run_args) as (templates, redis_url, llm, voyage, log_dir), \
            pgbouncer(templates.server_url, pool_size=args.bouncer_pool) as bouncer, \
            Watch(templates.server_url).running() as watch:
        chosen = {MODE_NAMES[m] for m in wanted}
        runs = [m for m in modes(bouncer) if m[0] in chosen] * max(1, args.repeat)
        for name, worker_db in runs:
            result = run_ours(argparse.Namespace(**vars(run_args), label=name), templates,
                              redis_url, llm, voyage, log_dir, worker_db=worker_db,
                              on_database=watch.watch)
            print(f"  {name}: {result.sessions} sessions in {result.seconds:.1f}s "
                  f"({result.sessions_per_s:.1f}/s), pg connections peak {watch.peak}",
                  flush=True)
            rows.append((name, result, watch.peak))
    print(report(rows, args.bouncer_pool, args, info))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "machine": info, "bouncer_pool": args.bouncer_pool,
            "runs": [{"mode": n, "pg_connections_peak": p, **asdict(r)} for n, r, p in rows]},
            indent=2))
    return 0 if all(r.verification.ok for _, r, _ in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
