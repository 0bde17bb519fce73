"""One drain of the drain benchmark (``bench/drain_bench.py``): the stack (PostgreSQL, Redis,
the fake providers as processes), the seeded idle sessions, a real ``celery beat``, a solo claim
worker and the classify worker(s), the poll until every session is stamped, and its
verification. ``bench/drain_pools.py`` (pool comparison), ``bench/drain_bouncer.py`` (through
PgBouncer), ``bench/guard_ready_bench.py`` and ``bench/classify_cpu_bench.py`` run it too.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from bench.drain_support import (
    CpuMeter,
    FakeServer,
    call_latencies,
    free_port,
    postmaster_pid,
    task_times,
    terminate_all,
    tree_cpu,
    tree_memory,
)
from testkit.guard import seed_template
from testkit.services import TemplateDatabases, postgres_server, redis_server
from testkit.workers import BeatProcess, WorkerProcess, worker_env

LLM_MS = 300.0
EMBED_MS = 30.0
MEMORIES_PER_SESSION = 3
#: ``application_name`` of the bench's own database connections (seeding, polling).
BENCH_APP = "eros-bench"

SEED_SESSIONS = text("""
INSERT INTO engine.chat_sessions (user_id, last_active_at)
SELECT gen_random_uuid(), now() - make_interval(secs => 7200 + g)
  FROM generate_series(1, :n) AS g
""")
# Three user turns a minute apart, ending at last_active_at (so the sessions stay idle).
SEED_MESSAGES = text("""
INSERT INTO engine.chat_messages (session_id, role, content, sent_at)
SELECT s.id, 'user', format('MEM fact 0.5 remembers %s item %s', s.id, k),
       s.last_active_at - make_interval(mins => 3 - k)
  FROM engine.chat_sessions AS s CROSS JOIN generate_series(1, 3) AS k
 ORDER BY s.id, k
""")


@dataclass
class Verification:
    memories: int
    expected: int
    duplicates: int
    unfinished: int
    wrong_sessions: int

    @property
    def ok(self) -> bool:
        return (self.memories == self.expected and not self.duplicates and not self.unfinished
                and not self.wrong_sessions)


@dataclass
class Result:
    label: str
    sessions: int
    seconds: float
    sessions_per_s: float
    steady_per_s: float
    concurrency: int
    llm_calls_per_session: float
    embed_calls_per_session: float
    rss_mb: float
    pss_mb: float
    verification: Verification
    note: str = ""
    cpu: str = ""
    tasks: str = ""
    #: CPU milliseconds per session by component (ours only)
    cpu_ms: dict[str, float] = field(default_factory=dict)


def seed(engine: Engine, count: int) -> None:
    with engine.begin() as conn:
        conn.execute(SEED_SESSIONS, {"n": count})
        conn.execute(SEED_MESSAGES)


def verify(engine: Engine, count: int) -> Verification:
    """Exactly three memories per session, each the session's own, none twice, all stamped."""
    with engine.connect() as conn:
        row = conn.execute(text("""
            SELECT count(*) AS memories,
                   count(*) - count(DISTINCT (session_id, content)) AS duplicates,
                   count(*) FILTER (WHERE position(session_id::text IN content) = 0) AS wrong
              FROM engine.companion_memories""")).one()
        unfinished = conn.execute(text(
            "SELECT count(*) FROM engine.chat_sessions WHERE classified_at IS NULL")).scalar_one()
    return Verification(row.memories, count * MEMORIES_PER_SESSION, row.duplicates,
                        int(unfinished), row.wrong)


def finish_times(engine: Engine) -> list[float]:
    with engine.connect() as conn:
        return sorted(float(t) for t in conn.execute(text(
            "SELECT extract(epoch FROM classified_at) FROM engine.chat_sessions"
            " WHERE classified_at IS NOT NULL")).scalars())


def steady_rate(times: list[float]) -> float:
    """Sessions per second between the 10th and 90th percentile finish: no ramp-up or tail."""
    if len(times) < 20:
        return 0.0
    lo, hi = times[len(times) // 10], times[len(times) * 9 // 10]
    return (len(times) * 9 // 10 - len(times) // 10) / max(hi - lo, 1e-9)


@contextmanager
def stack() -> Iterator[tuple[TemplateDatabases, str]]:
    """PostgreSQL and Redis: ``EROS_BENCH_DATABASE_URL`` / ``EROS_BENCH_REDIS_URL``, or an
    embedded PostgreSQL and ``redis_server()``'s database 0."""
    pg_given = os.environ.get("EROS_BENCH_DATABASE_URL")
    redis_given = os.environ.get("EROS_BENCH_REDIS_URL")
    with (nullcontext(pg_given) if pg_given else postgres_server()) as pg, \
            (nullcontext(redis_given) if redis_given else redis_server()) as redis_base:
        templates = TemplateDatabases(pg.replace("postgresql://", "postgresql+psycopg://", 1),
                                      seed=lambda url: seed_template(url, None))
        try:
            redis_url = redis_given or (
                f"{redis_base}?virtual_host=0" if redis_base.startswith("redis+socket")
                else f"{redis_base}/0")
            yield templates, redis_url
        finally:
            templates.close()


@contextmanager
def environment(args: argparse.Namespace
                ) -> Iterator[tuple[TemplateDatabases, str, FakeServer, FakeServer, Path]]:
    """The fake providers at ``--llm-ms``/``--embed-ms``, PostgreSQL and Redis (:func:`stack`)
    and the log directory, for one or several drains; the fakes boot while the database
    migrates."""
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="eros-drain-", dir="/tmp"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"logs: {log_dir}", flush=True)
    with ExitStack() as fakes:
        llm = FakeServer("llm_server", args.llm_ms, log_dir)
        fakes.callback(llm.stop)
        voyage = FakeServer("voyage_server", args.embed_ms, log_dir)
        fakes.callback(voyage.stop)
        with stack() as (templates, redis_url):
            llm.wait_ready()
            voyage.wait_ready()
            yield templates, redis_url, llm, voyage, log_dir


def run_ours(args: argparse.Namespace, templates: TemplateDatabases, redis_url: str,
             llm: FakeServer, voyage: FakeServer, log_dir: Path,
             worker_db: Callable[[str], dict[str, str]] | None = None,
             on_database: Callable[[str], None] | None = None) -> Result:
    """One drain. ``worker_db(db_url)``: environment that reroutes the workers' database
    (bench/drain_bouncer.py: through PgBouncer); ``on_database(name)`` is told the clone's
    name before the workers start. The bench's own connections say ``application_name``
    ``eros-bench``, so a connection count can leave them out."""
    db_url = templates.clone()
    if on_database is not None:
        on_database(str(make_url(db_url).database))
    engine = create_engine(db_url, pool_size=2, connect_args={"application_name": BENCH_APP})
    seed(engine, args.sessions)
    run = uuid.uuid4().hex[:8]
    env = worker_env(db_url, redis_url, llm.url, voyage.url,
                     DREAMING_TICK_SECS="1", DREAMING_BATCH=str(args.batch),
                     DREAMING_IDLE_SECS="60",
                     DREAMING_MAX_IN_FLIGHT=str(max(500, 3 * args.workers * args.concurrency)),
                     **({"DATABASE_POOL_SIZE": str(args.db_pool)} if args.db_pool else {}),
                     EROS_CLAIM_QUEUE=f"bench-{run}.claim",
                     EROS_CLASSIFY_QUEUE=f"bench-{run}.classify",
                     **(worker_db(db_url) if worker_db is not None else {}))
    concurrency = args.workers * args.concurrency
    with ExitStack() as cleanup:
        workers = []
        ports = [free_port() if args.metrics else 0 for _ in range(args.workers)]
        for i in range(args.workers):
            worker_env_i = {**env, "EROS_METRICS_PORT": str(ports[i])}
            worker = WorkerProcess(worker_env_i, name=f"classify{i}-{run}",
                                   concurrency=args.concurrency,
                                   pool=args.pool, log_dir=log_dir,
                                   queues=env["EROS_CLASSIFY_QUEUE"],
                                   extra_args=prefetch_args(args))
            cleanup.callback(worker.stop)
            workers.append(worker)
        claimer = WorkerProcess(env, name=f"claim-{run}", concurrency=1, pool="solo",
                                log_dir=log_dir, queues=env["EROS_CLAIM_QUEUE"])
        cleanup.callback(claimer.stop)
        for worker in [*workers, claimer]:
            worker.wait_ready(timeout=120)
        llm_before, embed_before = llm.requests(), voyage.requests()
        beat = BeatProcess(env, log_dir=log_dir, name=f"beat-{run}")
        cleanup.callback(beat.stop)
        # runs first: every process starts its warm shutdown at once, not one after another
        cleanup.callback(terminate_all, [*(w.proc for w in workers), claimer.proc, beat.proc])
        pids = [w.proc.pid for w in workers]
        meter = CpuMeter({"classify worker(s)": pids,
                          "claim worker + beat": [claimer.proc.pid, beat.proc.pid],
                          "fake LLM server": [llm.proc.pid],
                          "fake Voyage server": [voyage.proc.pid],
                          "postgres": postmaster_pid(data_directory(engine))})
        beat_start = wait_beat_started(beat)
        meter.start()
        t0 = wait_first_claim(engine)
        peak_rss = peak_pss = 0.0
        deadline = time.monotonic() + (args.timeout or max(300.0, args.sessions / 2))
        while unfinished(engine):
            if time.monotonic() > deadline:
                raise TimeoutError(f"drain did not finish; logs in {log_dir}")
            rss, pss = tree_memory(pids)
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            time.sleep(0.5)
        meter.stop()
        llm_calls, embed_calls = llm.requests() - llm_before, voyage.requests() - embed_before
        calls = call_latencies([p for p in ports if p])
    times = finish_times(engine)
    verification = verify(engine, args.sessions)
    engine.dispose()
    seconds = times[-1] - t0
    label = getattr(args, "label", None) or (
        f"ours: {args.workers}x {args.pool} -c {args.concurrency}"
        + (f" db {args.db_pool}" if args.db_pool else "")
        + (f" prefetch x{args.prefetch}" if getattr(args, "prefetch", 0) else ""))
    return Result(label, args.sessions,
                  seconds, args.sessions / seconds, steady_rate(times), concurrency,
                  llm_calls / args.sessions, embed_calls / args.sessions, peak_rss, peak_pss,
                  verification, note="beat tick 1 s + solo claim worker (not in memory)",
                  cpu=meter.table(args.sessions)
                  + f"\n(beat's start-up before its first tick, not counted: "
                    f"{beat_start:.1f} CPU s)",
                  tasks=task_times([w.log() for w in workers], concurrency, seconds,
                                   ideal=(args.llm_ms + args.embed_ms) / 1000) + calls,
                  cpu_ms={k: 1000 * v / args.sessions for k, v in meter.used.items()
                          if k != "wall"})


def prefetch_args(args: argparse.Namespace) -> tuple[str, ...]:
    """``--prefetch-multiplier`` for the classify workers when a run overrides the app's
    (``gevent:128~1`` in ``--compare``: the multiplier before a gevent worker's became 2)."""
    multiplier = getattr(args, "prefetch", 0)
    return (f"--prefetch-multiplier={multiplier}",) if multiplier else ()


def wait_beat_started(beat: BeatProcess, timeout: float = 120.0) -> float:
    """CPU seconds beat spent starting (imports, the app, its schedule), once it logs
    ``beat: Starting...``, just before its first tick. The meter starts then: the workers'
    start-up is not counted either (they are ready before), and a beat's start-up is paid once
    a deployment, not per session (it was ~1 ms a session of a 1,024-session drain)."""
    deadline = time.monotonic() + timeout
    while "beat: Starting..." not in beat.log_path.read_text(errors="replace"):
        if beat.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"beat did not start; see {beat.log_path}")
        time.sleep(0.01)
    return tree_cpu([beat.proc.pid])


def unfinished(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM engine.chat_sessions"
                                     " WHERE classified_at IS NULL")).scalar_one())


def data_directory(engine: Engine) -> str:
    with engine.connect() as conn:
        return str(conn.execute(text("SHOW data_directory")).scalar_one())


def wait_first_claim(engine: Engine, timeout: float = 60.0) -> float:
    """Wall time at which the first tick's claim landed (polled every 20 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            if conn.execute(text("SELECT EXISTS (SELECT 1 FROM engine.chat_sessions WHERE"
                                 " claim_token IS NOT NULL OR classified_at IS NOT NULL)")
                            ).scalar_one():
                return time.time()
        time.sleep(0.02)
    raise TimeoutError("beat never claimed anything")

