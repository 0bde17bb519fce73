"""Drain throughput: idle sessions through real beat + celery workers against local fake
provider APIs (300 ms LLM, 30 ms embedding), against a reference-style sequential loop.

Why it matters: the reference classifies sessions one after another, one embedding call per
candidate, 10 sessions per 5-minute tick (weakness 6: about 120 sessions an hour). Ours fans out
one task per session, so throughput should approach the bound set by concurrency and provider
latency: ``concurrency / (0.3 + 0.03) s``. What stands between us and that bound (dispatch,
database round trips, CPU on a 2-core box) is what this measures.

OUR path: its own embedded PostgreSQL (migrated clone), Redis from
``testkit.services.redis_server()`` with queue names unique to the run, the fake servers
as separate processes, a real ``celery beat`` (DREAMING_TICK_SECS=1), a dedicated solo claim
worker and the classify worker(s). Every session has three ``MEM fact 0.5 <unique>`` user
turns, so the expected result is exactly three memories each.

BASELINE (reference-style, in-process, same fake servers): claim 10 with the reference's
claim SQL, then per session one LLM call, one embedding call PER CANDIDATE, each memory inserted
and committed on its own, then the stamp. It runs on a smaller sample and its per-session
rate is extrapolated; ticks run back to back, so the rate shown is what the loop could do
unthrottled. The reference's real ceiling is the tick: 10 sessions / 300 s = 120 per hour.

    python -m bench.drain_bench [--sessions 2000] [--baseline-sessions 100]
        [--workers 1] [--concurrency 16] [--pool prefork|threads] [--log-dir D] [--json F]
        [--timeout S]

``EROS_BENCH_DATABASE_URL`` (a superuser URL) and ``EROS_BENCH_REDIS_URL`` (with a database
number) point at existing servers instead of the embedded PostgreSQL and the test Redis.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine

from bench.claim_bench import machine
from bench.drain_pools import compare
from bench.drain_reference import reference_drain
from bench.drain_run import (
    EMBED_MS,
    LLM_MS,
    Result,
    environment,
    finish_times,
    run_ours,
    seed,
    steady_rate,
    verify,
)
from bench.drain_support import FakeServer, tree_memory
from testkit.services import TemplateDatabases


def run_baseline(args: argparse.Namespace, templates: TemplateDatabases, llm: FakeServer,
                 voyage: FakeServer) -> Result:
    db_url = templates.clone()
    engine = create_engine(db_url, pool_size=2)
    seed(engine, args.baseline_sessions)
    llm_before, embed_before = llm.requests(), voyage.requests()
    start, cpu_start = time.time(), time.process_time()
    ticks = reference_drain(engine, llm.url, voyage.url, per_tick=10)
    seconds, cpu = time.time() - start, time.process_time() - cpu_start
    llm_calls, embed_calls = llm.requests() - llm_before, voyage.requests() - embed_before
    verification = verify(engine, args.baseline_sessions)
    times = finish_times(engine)
    engine.dispose()
    n = args.baseline_sessions
    rss, pss = tree_memory([os.getpid()])
    return Result("reference loop (sequential)", n, seconds, n / seconds, steady_rate(times), 1,
                  llm_calls / n, embed_calls / n, rss, pss, verification,
                  note=f"{ticks} ticks back to back; extrapolated to {args.sessions}: "
                       f"{args.sessions / (n / seconds):.0f} s unthrottled, "
                       f"{args.sessions / 120:.1f} h at 10 per 300 s tick",
                  cpu=f"reference loop process: {cpu:.1f} CPU s, "
                      f"{1000 * cpu / n:.1f} ms/session")


def report(ours: Result, base: Result, bound: float, info: dict[str, Any],
           latency_s: float = (LLM_MS + EMBED_MS) / 1000) -> str:
    head = (f"{'path':<34} {'sessions':>8} {'wall s':>7} {'sess/s':>7} {'steady':>7} "
            f"{'bound':>6} {'%bound':>6} {'llm/s':>5} {'emb/s':>5} {'RSS MB':>7} {'PSS MB':>7} ok")
    lines = [head, "-" * len(head)]
    for r in (ours,) if base is ours else (ours, base):
        b = r.concurrency / latency_s
        lines.append(
            f"{r.label:<34} {r.sessions:>8} {r.seconds:>7.1f} {r.sessions_per_s:>7.2f} "
            f"{r.steady_per_s:>7.2f} {b:>6.1f} {100 * r.sessions_per_s / b:>5.0f}% "
            f"{r.llm_calls_per_session:>5.2f} {r.embed_calls_per_session:>5.2f} "
            f"{r.rss_mb:>7.0f} {r.pss_mb:>7.0f} {'yes' if r.verification.ok else 'NO'}")
    ratio = ours.sessions_per_s / bound
    lines += [
        f"\nours vs reference loop: {ours.sessions_per_s / base.sessions_per_s:.1f}x unthrottled; "
        f"{ours.sessions_per_s * 3600 / 120:.0f}x the reference's 120 sessions/hour tick bound",
        f"ours / bound = {100 * ratio:.0f}% (target >= 80%): {'PASS' if ratio >= 0.8 else 'MISS'}",
        f"verification ours: {asdict(ours.verification)}",
        f"verification reference: {asdict(base.verification)}",
        f"notes: ours — {ours.note}; reference — {base.note}",
        f"classify tasks (worker logs): {ours.tasks}",
        f"\nCPU during our drain (2 cores shared with other work):\n{ours.cpu}",
        *([] if base is ours else [base.cpu]),
        f"machine: {info}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drain_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--baseline-sessions", type=int, default=100)
    parser.add_argument("--workers", type=int, default=1, help="classify worker processes")
    parser.add_argument("--concurrency", type=int, default=16, help="pool size per worker")
    parser.add_argument("--pool", choices=("prefork", "threads", "gevent"), default="prefork")
    parser.add_argument("--llm-ms", type=float, default=LLM_MS, help="fake LLM latency")
    parser.add_argument("--embed-ms", type=float, default=EMBED_MS,
                        help="fake embedding latency")
    parser.add_argument("--db-pool", type=int, default=0,
                        help="DATABASE_POOL_SIZE of the classify workers (default: theirs, 5)")
    parser.add_argument("--compare", default="",
                        help="pool:concurrency,... e.g. prefork:16,gevent:128 — one drain each "
                             "in this run (sessions = --rounds x concurrency), no reference loop")
    parser.add_argument("--rounds", type=int, default=8,
                        help="--compare: sessions per run = rounds x concurrency")
    parser.add_argument("--batch", type=int, default=100, help="DREAMING_BATCH per 1 s tick")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds the drain may take (default max(300, sessions / 2))")
    parser.add_argument("--metrics", action="store_true",
                        help="serve the workers' Prometheus metrics and report call latency")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    parser.add_argument("--log-dir", type=Path, default=None,
                        help="worker, beat and fake-server logs (default: a new /tmp/eros-drain-*)")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(args)
    info = machine()
    with environment(args) as (templates, redis_url, llm, voyage, log_dir):
        ours = run_ours(args, templates, redis_url, llm, voyage, log_dir)
        print(f"  ours: {ours.sessions} sessions in {ours.seconds:.1f}s", flush=True)
        base = ours if args.skip_baseline else run_baseline(args, templates, llm, voyage)
    latency_s = (args.llm_ms + args.embed_ms) / 1000
    bound = ours.concurrency / latency_s
    print(report(ours, base, bound, info, latency_s))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": info, "ours": asdict(ours),
                                         "baseline": asdict(base), "bound": bound}, indent=2))
    ok = ours.verification.ok and base.verification.ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
