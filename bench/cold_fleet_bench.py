"""A cold fleet on a busy machine, through restarts and a SIGKILL, layer on against layer off.

What a new deployment meets: a fresh database WITHOUT the guard's meaning model for its live
embedder, ``--workers`` Procfile workers (``celery -A eros.worker worker --pool=prefork``)
started at the same moment, beat, live-shaped providers (the fake OpenRouter and Voyage
servers speaking their wire formats through the real SDKs, with ``--llm-ms`` / ``--embed-ms``
of latency), ``--busy`` processes burning CPU beside the fleet, and during the drain the
disruptions of the chaos tier once each: a Redis restart (its queue lost), a PostgreSQL
restart, a SIGKILL of one worker with its pool (a replacement starts, cold too). The same run
with ``MEMORY_GUARD_CLASSIFIER=off`` is the baseline; the variants alternate for ``--rounds``.

Reported per run and as medians: the start-up (spawn to every worker ready: the fleet's one
training under the advisory lock happens there), the drain, their sum, embedding requests at
start-up and per session during the drain (every session has 1-2 candidates; a session whose
attempt was cut by a disruption and ran again calls again, in both variants), memories not
``current`` at the end, and the chaos tier's exactly-once verification.

Run: ``.venv/bin/python -m bench.cold_fleet_bench --sessions 400 --rounds 3``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import create_engine, text

from testkit.chaos.harness import Disruption, Result, Servers, Stack, run
from testkit.chaos.scenarios import sigkill_one, wait_for_progress

VARIANTS: tuple[tuple[str, dict[str, str]], ...] = (("layer on, no model yet", {}),
            ("layer off", {"MEMORY_GUARD_CLASSIFIER": "off"}))
BURN = "while True:\n    pass\n"


def cold(url: str) -> None:
    """Each variant's database is a fresh deployment's: migrated, no guard model stored (the
    chaos template carries one for the fake Voyage server)."""
    engine = create_engine(url, pool_size=1)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM engine.guard_classifiers"))
    engine.dispose()


def each_once(sessions: int) -> Disruption:
    """Redis restarted, then PostgreSQL, then one worker SIGKILLed, a quarter of the backlog
    apart."""
    step = max(1, sessions // 4)
    return lambda stack, stop: _each_once(stack, stop, step)


def _each_once(stack: Stack, stop: threading.Event, step: int) -> None:
    if not wait_for_progress(stack, stop, step):
        return
    stack.redis.restart(downtime=2.0)
    stack.events.append("redis restarted (queue lost)")
    if not wait_for_progress(stack, stop, step):
        return
    stack.pg.restart(downtime=3.0)
    stack.events.append("postgres restarted")
    if wait_for_progress(stack, stop, step):
        sigkill_one(stack)


def no_disruption(stack: Stack, stop: threading.Event) -> None:
    """The smoke run's: nothing breaks."""


@dataclass
class Measured:
    label: str
    result: Result
    startup_calls: int
    drain_calls: int
    not_current: int

    @property
    def total(self) -> float:
        return self.result.startup + self.result.seconds


def one_variant(label: str, extra: dict[str, str], servers: Servers,
                args: argparse.Namespace, index: int) -> Measured:
    counts: dict[str, int] = {}

    def on_ready(stack: Stack) -> None:
        stack.llm.set_latency(args.llm_ms / 1000)
        stack.voyage.set_latency(args.embed_ms / 1000)
        counts["startup"] = stack.voyage.request_count
        counts_stack.append(stack)

    counts_stack: list[Stack] = []
    disruption = no_disruption if args.no_chaos else each_once(args.sessions)
    result = run(f"cold{index}", disruption, servers, sessions=args.sessions,
                 workers=args.workers, concurrency=args.concurrency, timeout=args.timeout,
                 extra_env=extra, on_database=cold, on_ready=on_ready)
    stack = counts_stack[0]
    drain_calls = stack.voyage.request_count - counts["startup"]
    with stack.engine.connect() as conn:
        not_current = int(conn.execute(text(
            "SELECT count(*) FROM engine.companion_memories WHERE status <> 'current'"
        )).scalar_one())
    return Measured(label, result, counts["startup"], drain_calls, not_current)


def burners(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(n)]


def report(runs: list[Measured], args: argparse.Namespace) -> str:
    lines = [f"{args.workers} Procfile workers x prefork -c {args.concurrency}, "
             f"{args.sessions} sessions (1-2 candidates each), fake LLM {args.llm_ms:.0f} ms, "
             f"fake Voyage {args.embed_ms:.0f} ms, {args.busy} CPU burners, "
             + ("no disruption" if args.no_chaos
                else "Redis restart + PostgreSQL restart + one SIGKILL mid-drain"),
             "",
             "| run | variant | start-up s | drain s | total s | start-up embedding calls | "
             "embedding calls / session (drain) | not current at the end | verified | events |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for n, m in enumerate(runs):
        r = m.result
        lines.append(f"| {n // 2 + 1} | {m.label} | {r.startup:.1f} | {r.seconds:.1f} | "
                     f"{m.total:.1f} | {m.startup_calls} | {m.drain_calls / r.sessions:.3f} | "
                     f"{m.not_current} | {'yes' if r.ok else 'NO'} | {'; '.join(r.events)} |")
    on = [m for m in runs if m.label == VARIANTS[0][0]]
    off = [m for m in runs if m.label == VARIANTS[1][0]]
    keys: tuple[tuple[str, Callable[[Measured], float]], ...] = (
        ("drain", lambda m: m.result.seconds), ("start-up + drain", lambda m: m.total))
    for what, key in keys:
        ratios = [key(a) / key(b) for a, b in zip(on, off, strict=True)]
        a, b = statistics.median(map(key, on)), statistics.median(map(key, off))
        lines.append(f"\n{what}, layer on / layer off: medians {a:.1f} / {b:.1f} s = "
                     f"{a / b:.3f}; per-run ratios {', '.join(f'{x:.3f}' for x in ratios)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None, servers: Servers | None = None) -> int:
    """``servers``: the chaos tier's PostgreSQL and Redis when a test already runs them."""
    parser = argparse.ArgumentParser(prog="python -m bench.cold_fleet_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=400)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="on/off pairs, alternating")
    parser.add_argument("--busy", type=int, default=2, help="CPU-burning processes beside it")
    parser.add_argument("--llm-ms", type=float, default=300.0)
    parser.add_argument("--embed-ms", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, default=300.0, help="per drain, seconds")
    parser.add_argument("--no-chaos", action="store_true", help="no restarts, no SIGKILL")
    args = parser.parse_args(argv)
    runs: list[Measured] = []
    own = servers is None
    shared = Servers() if servers is None else servers
    burning = burners(args.busy)
    try:
        for n in range(args.rounds):
            for label, extra in VARIANTS:
                m = one_variant(label, dict(extra), shared, args, len(runs))
                runs.append(m)
                print(f"  round {n + 1}, {label}: start-up {m.result.startup:.1f} s, drain "
                      f"{m.result.seconds:.1f} s, verified {m.result.ok}", flush=True)
    finally:
        for proc in burning:
            proc.kill()
            proc.wait()
        if own:
            shared.close()
    print()
    print(report(runs, args))
    return 0 if all(m.result.ok and m.not_current == 0 for m in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
