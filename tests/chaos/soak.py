"""The soak (issue 16): a product writes turns into a few hundred sessions *while* 3 workers
and 2 beats classify them with a 2 s idle threshold, and PostgreSQL is restarted midway.

The simulator writes the ways a chat product does: autocommitted turns; a user turn and its
reply in one transaction held open up to 1.5 s (the product's own chat-model call); several
turns in one statement; two writers on one session; turns with an explicit past ``sent_at``;
and every session's last turn written while a worker holds the session's claim (the fake
model holds its reply until that turn is in). Every user turn
is a ``MEM`` line the fake LLM turns into exactly one memory, so afterwards each committed user
turn must be in its session's memories exactly once (lost 0, duplicates 0). A run cut after
the model answered (its stamp hit the restart) is retried and reads its turns again; the soak
counts turns sent to the model more than once (``read twice``) from the LLM requests.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, text

from testkit.chaos.harness import CHAOS_ENV, Servers
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.fakes.llm_server import Reply, echo_memories_responder
from testkit.workers import BeatProcess, WorkerProcess, worker_env

SOAK_ENV = {**CHAOS_ENV, "DREAMING_IDLE_SECS": "2", "DREAMING_TICK_SECS": "1",
            "DREAMING_MAX_MEMORIES": "50", "DREAMING_MAX_IN_FLIGHT": "400"}
SESSION = text("INSERT INTO engine.chat_sessions (id, user_id, last_active_at)"
               " VALUES (:id, :u, now())")
TURN = text("INSERT INTO engine.chat_messages (session_id, role, content, sent_at)"
            " VALUES (:sid, :role, :content, now() - make_interval(secs => :past))")
_TOKEN = re.compile(r"soak [0-9a-f]{8}\.\d+")


@dataclass
class SoakResult:
    sessions: int
    user_turns: int
    lost: int
    duplicates: int
    read_twice: int
    last_turns_during_claim: int
    unfinished: int
    seconds: float
    events: list[str]

    @property
    def ok(self) -> bool:
        return self.lost == self.duplicates == self.unfinished == 0


class Product:
    """The chat product's writers: threads over a shared engine, retrying a failed write (a
    database restart) as a product would; what finally committed is read back at the end."""

    def __init__(self, engine: Engine, sessions: list[uuid.UUID], seed: int) -> None:
        self.engine = engine
        self.sessions = sessions
        self.rng = random.Random(seed)
        self.counter = 0
        self.lock = threading.Lock()
        self.errors = 0

    def token(self, sid: uuid.UUID) -> str:
        with self.lock:
            self.counter += 1
            return f"soak {sid.hex[:8]}.{self.counter}"

    def user(self, sid: uuid.UUID, past: float = 0.0) -> dict[str, object]:
        return {"sid": sid, "role": "user", "content": f"MEM fact 0.5 {self.token(sid)}",
                "past": past}

    @staticmethod
    def reply(sid: uuid.UUID) -> dict[str, object]:
        return {"sid": sid, "role": "assistant", "content": "I hear you.", "past": 0.0}

    def write(self, rows: list[dict[str, object]], hold: float = 0.0,
              inserted: threading.Event | None = None) -> None:
        """One transaction (one statement for all ``rows``), kept open ``hold`` seconds;
        ``inserted`` is set once the rows are in (the transaction then holds the session row,
        which the seq trigger locked)."""
        for _ in range(20):
            try:
                with self.engine.begin() as conn:
                    conn.execute(TURN, rows)
                    if inserted is not None:
                        inserted.set()
                    if hold:
                        time.sleep(hold)  # the product's own model call, inside the transaction
                return
            except Exception:  # the database is restarting: try again, as a product would
                with self.lock:
                    self.errors += 1
                time.sleep(0.5)

    def one_step(self, rng: random.Random) -> None:
        sid = rng.choice(self.sessions)
        kind = rng.randrange(5)
        if kind == 0:  # autocommitted turn
            self.write([self.user(sid)])
        elif kind == 1:  # a user turn and its reply, the transaction held open up to 1.5 s
            self.write([self.user(sid), self.reply(sid)], hold=rng.uniform(0.0, 1.5))
        elif kind == 2:  # several turns in one statement
            self.write([self.user(sid) for _ in range(rng.randint(2, 4))] + [self.reply(sid)])
        elif kind == 3:  # an explicit past sent_at (an offline client syncing late)
            self.write([self.user(sid, past=rng.uniform(1.0, 30.0))])
        else:  # two writers on one session at once
            both = [threading.Thread(target=self.write, args=([self.user(sid)],),
                                     kwargs={"hold": rng.uniform(0.0, 0.5)})
                    for _ in range(2)]
            for t in both:
                t.start()
            for t in both:
                t.join()

    def writer(self, stop: threading.Event, seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            self.one_step(rng)
            stop.wait(rng.uniform(0.0, 0.3))

    def last_turns_during_claims(self, llm: FakeLLMServer, deadline: float) -> int:
        """Every session's last turn, written while a worker holds the session's claim.

        One more user turn goes to every session, so each is claimed again once idle; the fake
        model then holds its reply to a session's first request until that session's last turn
        (a user turn and its reply) is inserted in a transaction kept open 0.2 s — across the
        worker's stamp, which must wait for it and leave the session open for that turn.
        """
        pending = {sid.hex[:8]: sid for sid in self.sessions}
        lock = threading.Lock()
        threads: list[threading.Thread] = []

        def responder(request: dict[str, object]) -> Reply:
            text_ = json.dumps(request.get("messages"))
            for prefix in {token.split()[1].split(".")[0] for token in _TOKEN.findall(text_)}:
                with lock:
                    sid = pending.pop(prefix, None)
                if sid is None:
                    continue
                inserted = threading.Event()
                thread = threading.Thread(target=self.write,
                                          args=([self.user(sid), self.reply(sid)],),
                                          kwargs={"hold": 0.2, "inserted": inserted})
                thread.start()
                with lock:
                    threads.append(thread)
                inserted.wait(10)  # the reply goes out only once the last turn is in
            return echo_memories_responder(request)

        llm.set_responder(responder)
        try:
            for sid in self.sessions:
                self.write([self.user(sid)])
            while time.monotonic() < deadline:
                with lock:
                    if not pending:
                        break
                time.sleep(0.1)
        finally:
            llm.set_responder(None)
        with lock:
            left, started = list(pending.values()), list(threads)
        for thread in started:
            thread.join()
        for sid in left:  # never claimed in time: written anyway, and not counted
            self.write([self.user(sid)])
        return len(self.sessions) - len(left)


def soak(servers: Servers, *, sessions: int = 200, write_secs: float = 60.0,
         writers: int = 6, timeout: float = 120.0, seed: int = 16) -> SoakResult:
    log_dir = Path(tempfile.mkdtemp(prefix="eros-chaos-soak-"))
    llm = FakeLLMServer(latency=0.5).start()  # model calls take time, as in production
    voyage = FakeVoyageServer().start()
    db = servers.fresh_database("soak")
    engine = create_engine(db, pool_pre_ping=True, pool_size=writers + 4, max_overflow=10)
    env = worker_env(db, servers.redis.url, llm.url, voyage.url, **SOAK_ENV)
    events: list[str] = []
    workers = [WorkerProcess(env, name=f"w{i + 1}", concurrency=4, log_dir=log_dir)
               for i in range(3)]
    beats: list[BeatProcess] = []
    try:
        ids = [uuid.uuid4() for _ in range(sessions)]
        with engine.begin() as conn:
            conn.execute(SESSION, [{"id": sid, "u": uuid.uuid4()} for sid in ids])
        for worker in workers:
            worker.wait_ready(timeout=90)
        beats = [BeatProcess(env, log_dir=log_dir, name=f"beat{i + 1}") for i in range(2)]
        product = Product(engine, ids, seed)
        started = time.monotonic()
        stop = threading.Event()
        threads = [threading.Thread(target=product.writer, args=(stop, seed + i))
                   for i in range(writers)]
        for t in threads:
            t.start()
        time.sleep(write_secs / 2)
        servers.pg.restart(downtime=3.0)
        events.append("postgres restarted")
        time.sleep(write_secs / 2)
        stop.set()
        for t in threads:
            t.join()
        caught = product.last_turns_during_claims(llm, time.monotonic() + 60)
        events.append(f"product write retries {product.errors}")
        deadline = started + write_secs + timeout
        unfinished = -1
        while time.monotonic() < deadline:
            unfinished = _unfinished(engine)
            if unfinished == 0:
                break
            time.sleep(0.5)
        seconds = time.monotonic() - started
        time.sleep(1.0)  # a late duplicate delivery may still try (and must fail) to write
        return _verify(engine, llm, sessions, caught, unfinished, seconds, events)
    finally:
        for beat in beats:
            beat.stop()
        for worker in workers:
            worker.kill()
            worker.stop()
        engine.dispose()
        llm.stop()
        voyage.stop()


def _unfinished(engine: Engine) -> int:
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(
                "SELECT count(*) FROM engine.chat_sessions"
                " WHERE classified_at IS NULL AND dead_lettered_at IS NULL")).scalar_one())
    except Exception:
        return -1


def _verify(engine: Engine, llm: FakeLLMServer, sessions: int, caught: int, unfinished: int,
            seconds: float, events: list[str]) -> SoakResult:
    with engine.connect() as conn:
        turns = conn.execute(text(
            "SELECT session_id, substring(content from 'soak [0-9a-f]{8}\\.[0-9]+') AS token"
            " FROM engine.chat_messages WHERE role = 'user'")).all()
        memories = Counter((r.session_id, r.content) for r in conn.execute(text(
            "SELECT session_id, content FROM engine.companion_memories")).all())
    lost = sum(1 for t in turns if memories[(t.session_id, t.token)] == 0)
    duplicates = sum(n - 1 for n in memories.values() if n > 1)
    seen = Counter(token for request in llm.requests
                   for token in set(_TOKEN.findall(request.raw_body.decode(errors="replace"))))
    read_twice = sum(1 for n in seen.values() if n > 1)
    return SoakResult(sessions, len(turns), lost, duplicates, read_twice, caught, unfinished,
                      round(seconds, 1), events)
