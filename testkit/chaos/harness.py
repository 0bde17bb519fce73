"""Run one chaos scenario: seed a backlog, drain it with real workers while a disruption
plays out, then check that every session ended exactly once and nothing was duplicated."""

from __future__ import annotations

import random
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, create_engine, text

from testkit.chaos.servers import RestartablePostgres, RestartableRedis
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.guard import seed_template
from testkit.rabbit import RabbitVhost
from testkit.services import with_database
from testkit.workers import BeatProcess, WorkerProcess, worker_env

CATEGORIES = ("fact", "preference", "event", "emotion", "relation")
TERMINAL = ("memories", "no_memories", "empty", "unparseable", "truncated")

#: short windows so a stale-claim rescue happens within seconds; still validated by Settings.
CHAOS_ENV = {
    "DREAMING_TICK_SECS": "1", "DREAMING_BATCH": "200", "DREAMING_MAX_IN_FLIGHT": "300",
    "DREAMING_CLAIM_STALE_SECS": "15", "LLM_TIMEOUT_SECS": "2", "EMBEDDING_TIMEOUT_SECS": "1",
    "PROVIDER_MAX_RETRIES": "0", "DREAMING_RETRY_BACKOFF_SECS": "0.5",
    "DREAMING_RETRY_BACKOFF_MAX_SECS": "4", "DREAMING_MAX_ATTEMPTS": "12",
    "EROS_VISIBILITY_TIMEOUT_SECS": "60",
}


@dataclass
class Stack:
    """Everything a scenario can poke at."""

    pg: RestartablePostgres
    redis: RestartableRedis
    llm: FakeLLMServer
    voyage: FakeVoyageServer
    engine: Engine
    env: dict[str, str]
    log_dir: Path
    workers: list[WorkerProcess] = field(default_factory=list)
    beats: list[BeatProcess] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    #: the RabbitMQ vhost when the scenario runs with BROKER_URL=amqp://… (else Redis brokers)
    rabbit: RabbitVhost | None = None

    def start_worker(self, name: str | None = None, concurrency: int = 4) -> WorkerProcess:
        worker = WorkerProcess(self.env, name=name or f"w{len(self.workers) + 1}",
                               concurrency=concurrency, log_dir=self.log_dir)
        worker.wait_ready(timeout=90)
        self.workers.append(worker)
        return worker

    def start_beat(self) -> BeatProcess:
        beat = BeatProcess(self.env, log_dir=self.log_dir, name=f"beat{len(self.beats) + 1}")
        self.beats.append(beat)
        return beat

    def live_workers(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.proc.poll() is None]

    def unfinished(self) -> int:
        try:
            with self.engine.connect() as conn:
                return int(conn.execute(text(
                    "SELECT count(*) FROM engine.chat_sessions"
                    " WHERE classified_at IS NULL AND dead_lettered_at IS NULL")).scalar_one())
        except Exception:  # the database may be restarting right now
            return -1


@dataclass
class Result:
    scenario: str
    sessions: int
    classified: int
    dead_lettered: int
    lost: int
    duplicates: int
    wrong: int
    twice: int
    stuck: int
    seconds: float
    events: list[str]
    #: seconds from spawning the workers to all of them ready (before the drain's clock)
    startup: float = 0.0

    @property
    def ok(self) -> bool:
        return (self.lost == self.duplicates == self.wrong == self.twice == self.stuck == 0
                and self.classified + self.dead_lettered == self.sessions)


Disruption = Callable[[Stack, threading.Event], None]


def seed(engine: Engine, count: int, rng: random.Random) -> dict[uuid.UUID, set[str]]:
    """``count`` idle sessions with 1–2 scripted memories each, inserted in one statement each
    for sessions and messages."""
    expected: dict[uuid.UUID, set[str]] = {}
    sessions, messages = [], []
    for n in range(count):
        sid = uuid.uuid4()
        contents = {f"chaos {n}.{i} {uuid.uuid4().hex[:8]}" for i in range(rng.randint(1, 2))}
        expected[sid] = contents
        sessions.append({"id": sid, "user_id": uuid.uuid4()})
        for i, content in enumerate(sorted(contents)):
            messages.append({"sid": sid, "i": i,
                             "content": f"MEM {rng.choice(CATEGORIES)} 0.5 {content}"})
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id, last_active_at)"
                          " VALUES (:id, :user_id, now() - interval '2 hours')"), sessions)
        conn.execute(text("INSERT INTO engine.chat_messages (session_id, role, content, sent_at)"
                          " VALUES (:sid, 'user', :content,"
                          " now() - interval '2 hours' + make_interval(secs => :i))"), messages)
    return expected


def verify(engine: Engine, expected: dict[uuid.UUID, set[str]], name: str, seconds: float,
           events: list[str]) -> Result:
    with engine.connect() as conn:
        sessions = {r.id: r for r in conn.execute(text(
            "SELECT id, classified_at, dead_lettered_at, last_error, claim_token,"
            " classification_claimed_at < now() - interval '15 seconds' AS stale"
            " FROM engine.chat_sessions"))}
        memories = conn.execute(text("SELECT session_id, content"
                                     " FROM engine.companion_memories")).all()
        finals: dict[uuid.UUID, int] = dict(conn.execute(text(
            "SELECT session_id, count(*) FROM engine.classification_runs"
            " WHERE outcome = ANY(:t) GROUP BY session_id"), {"t": list(TERMINAL)}).all())
    by_session: dict[uuid.UUID, list[str]] = {}
    for m in memories:
        by_session.setdefault(m.session_id, []).append(m.content)
    classified = sum(1 for s in sessions.values() if s.classified_at is not None)
    dead = sum(1 for s in sessions.values()
               if s.dead_lettered_at is not None and s.last_error)
    lost = sum(1 for s in sessions.values() if s.classified_at is None
               and s.dead_lettered_at is None)
    duplicates = sum(len(v) - len(set(v)) for v in by_session.values())
    wrong = sum(1 for sid, want in expected.items()
                if sessions[sid].classified_at is not None
                and set(by_session.get(sid, [])) != want)
    twice = sum(1 for n in finals.values() if n > 1)
    stuck = sum(1 for s in sessions.values() if s.claim_token is not None and s.stale)
    return Result(name, len(expected), classified, dead, lost, duplicates, wrong, twice,
                  stuck, round(seconds, 1), events)


class Servers:
    """PostgreSQL and Redis shared by the scenarios of one run; each scenario gets a fresh
    database cloned from a migrated template and a flushed Redis."""

    def __init__(self) -> None:
        from eros.db.migrate import upgrade

        self.pg = RestartablePostgres()
        self.redis = RestartableRedis()
        self.admin = create_engine(with_database(self.pg.url, "postgres"),
                                   isolation_level="AUTOCOMMIT", pool_pre_ping=True)
        with self.admin.connect() as conn:
            conn.execute(text("CREATE DATABASE chaos_template"))
        # as `eros migrate` does: the migrations, then the HNSW index as the settings need
        upgrade(with_database(self.pg.url, "chaos_template"))
        # the guard's meaning model for the fake Voyage server, as a migrated deployment has it
        # (issue 30): trained once here, not by each scenario's fleet
        seed_template(with_database(self.pg.url, "chaos_template"), None)

    def fresh_database(self, name: str) -> str:
        db = "chaos_" + name.replace("-", "_")
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))
            conn.execute(text(f'CREATE DATABASE "{db}" TEMPLATE chaos_template'))
        import redis as redis_client

        redis_client.Redis.from_url(self.redis.url).flushall()
        return with_database(self.pg.url, db)

    def close(self) -> None:
        self.admin.dispose()
        self.redis.close()
        self.pg.close()


def run(name: str, disruption: Disruption, servers: Servers, *, sessions: int = 1000,
        workers: int = 3, concurrency: int = 4, timeout: float = 240.0,
        seed_value: int = 1, rabbit: RabbitVhost | None = None,
        extra_env: dict[str, str] | None = None,
        on_database: Callable[[str], None] | None = None,
        on_ready: Callable[[Stack], None] | None = None) -> Result:
    """Seed, start workers and beat, run ``disruption`` beside the drain, verify. With
    ``rabbit`` the broker is that RabbitMQ vhost (BROKER_URL); Redis keeps the results and
    rate limits either way. ``extra_env`` is added to every process's environment;
    ``on_database`` gets the fresh database's URL before anything runs on it; ``on_ready``
    sees the stack once the workers are up, before beat starts the drain (a benchmark reads
    its start-up counters there)."""
    log_dir = Path(tempfile.mkdtemp(prefix=f"eros-chaos-{name}-"))
    llm, voyage = FakeLLMServer().start(), FakeVoyageServer().start()
    db = servers.fresh_database(name)
    if on_database is not None:
        on_database(db)
    engine = create_engine(db, pool_pre_ping=True)
    broker = {"BROKER_URL": rabbit.url} if rabbit else {}
    env = worker_env(db, servers.redis.url, llm.url, voyage.url,
                     **{**CHAOS_ENV, **broker, **(extra_env or {})})
    stack = Stack(servers.pg, servers.redis, llm, voyage, engine, env, log_dir, rabbit=rabbit)
    try:
        expected = seed(engine, sessions, random.Random(seed_value))
        spawned = time.monotonic()
        stack.workers = [WorkerProcess(env, name=f"w{i + 1}", concurrency=concurrency,
                                       log_dir=log_dir) for i in range(workers)]
        for worker in stack.workers:  # started together, waited for together
            worker.wait_ready(timeout=90)
        startup = time.monotonic() - spawned
        if on_ready is not None:
            on_ready(stack)
        started = time.monotonic()
        stack.start_beat()
        stop = threading.Event()
        chaos = threading.Thread(target=disruption, args=(stack, stop), daemon=True)
        chaos.start()
        deadline = started + timeout
        while time.monotonic() < deadline and stack.unfinished() != 0:
            time.sleep(0.5)
        stop.set()
        chaos.join(timeout=60)
        seconds = time.monotonic() - started
        time.sleep(1.0)  # let any late duplicate delivery try (and fail) to write
        result = verify(engine, expected, name, seconds, stack.events)
        result.startup = round(startup, 1)
        return result
    finally:
        for beat in stack.beats:
            beat.stop()
        for worker in stack.workers:  # verified already: no need for a warm shutdown
            worker.kill()
            worker.stop()
        engine.dispose()
        llm.stop()
        voyage.stop()


def table(results: list[Result]) -> str:
    head = ("scenario", "sessions", "classified", "dead-lettered", "lost", "duplicates",
            "wrong", "twice", "stuck", "drain s", "ok")
    rows = [(r.scenario, r.sessions, r.classified, r.dead_lettered, r.lost, r.duplicates,
             r.wrong, r.twice, r.stuck, r.seconds, "yes" if r.ok else "NO") for r in results]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([line.format(*head), line.format(*("-" * w for w in widths)),
                      *(line.format(*map(str, row)) for row in rows)])
