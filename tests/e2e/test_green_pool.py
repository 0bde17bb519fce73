"""The classify queue on a real gevent worker (``--pool=gevent``): our soft time limit fires
where Celery's gevent pool has none, and database waits yield to the other greenlets."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import redis
from sqlalchemy import Connection, Engine, RootTransaction, text

from eros.core.names import CLASSIFY_TASK
from eros.settings import load_settings
from eros.tasks.app import create_app
from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer
from testkit.fakes.llm_server import echo_memories_responder
from testkit.workers import BeatProcess, WorkerProcess, wait_until

pytestmark = pytest.mark.e2e


class TricklingLLM:
    """An OpenAI-style chat endpoint that, for a transcript containing ``TRICKLE``, sends the
    headers and then one space of body every 0.2 s until told to stop trickling: each read
    arrives well within the client's read timeout, so only a time limit on the task ends it.
    Other transcripts get the fake model's usual memories."""

    def __init__(self) -> None:
        self.trickling = threading.Event()  # set while a TRICKLE request is being held
        self.release = threading.Event()  # set: TRICKLE requests are answered normally
        self.held = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                reply = echo_memories_responder(body).content
                payload = json.dumps({
                    "id": "chatcmpl-trickle", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10,
                              "total_tokens": 20}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if "TRICKLE" not in json.dumps(body) or fake.release.is_set():
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                fake.held += 1
                fake.trickling.set()
                try:
                    while not fake.release.wait(0.2):
                        self.wfile.write(b"1\r\n \r\n")
                        self.wfile.flush()
                except OSError:  # the client gave up (its time limit fired)
                    pass
                finally:
                    fake.trickling.clear()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def trickling_llm() -> Iterator[TricklingLLM]:
    fake = TricklingLLM()
    yield fake
    fake.stop()


def _send(env: dict[str, str], session_id: uuid.UUID) -> None:
    """A shell-style classify message (no claim token: the task takes the claim itself)."""
    app = create_app(load_settings(redis_url=env["REDIS_URL"],
                                   database_url=env["DATABASE_URL"]))
    app.send_task(CLASSIFY_TASK, args=[str(session_id)])


def _session(engine: Engine, sid: uuid.UUID) -> tuple[str | None, str | None, bool]:
    with engine.connect() as conn:
        row = conn.execute(text("SELECT outcome, last_error, classified_at IS NOT NULL AS done"
                                " FROM engine.chat_sessions WHERE id = :i"), {"i": sid}).one()
    return row.outcome, row.last_error, row.done


def _memories(engine: Engine, sid: uuid.UUID) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT content FROM engine.companion_memories"
                                      " WHERE session_id = :i ORDER BY content"),
                                 {"i": sid}).scalars())


def _lock_sessions(holder: Connection, sids: list[uuid.UUID]) -> tuple[RootTransaction, int]:
    """Lock the sessions' rows in an open transaction on ``holder``: (it, its backend pid)."""
    tx = holder.begin()
    holder.execute(text("SELECT 1 FROM engine.chat_sessions WHERE id = ANY(:ids) FOR UPDATE"),
                   {"ids": sids})
    return tx, int(holder.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _waiting_on(engine: Engine, holder_pid: int) -> int:
    """Backends waiting for a lock that ``holder_pid`` holds."""
    with engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND :holder = ANY(pg_blocking_pids(pid))"), {"holder": holder_pid}).scalar_one())


@contextmanager
def _green_worker_on_held_rows(engine: Engine, env: dict[str, str], sids: list[uuid.UUID], *,
                               name: str, concurrency: int,
                               log_dir: Path, queues: str | None = None
                               ) -> Iterator[tuple[RootTransaction, int, WorkerProcess]]:
    """A gevent worker of ``concurrency`` started (on ``queues``, else every queue), the
    sessions' rows locked by an open transaction, and one classify message sent for each:
    (that transaction, its pid, the worker)."""
    worker = WorkerProcess(env, name=name, pool="gevent", concurrency=concurrency,
                           log_dir=log_dir, queues=queues)
    holder = engine.connect()
    try:
        worker.wait_ready()
        tx, holder_pid = _lock_sessions(holder, sids)
        for sid in sids:
            _send(env, sid)
        yield tx, holder_pid, worker
    finally:
        holder.close()
        worker.stop()


def test_soft_time_limit_fires_on_gevent_and_the_session_is_retried(
        engine: Engine, stack_env: dict[str, str], trickling_llm: TricklingLLM,
        tmp_path: Path) -> None:
    """A reply that never ends: the soft limit (70 % of a 10 s claim window) interrupts the
    attempt, which is recorded as ``retrying`` and retried like on prefork; meanwhile the same
    worker classifies another session; once the model answers, the retry writes the memory.
    Without our limit Celery's gevent pool only has the hard limit, which records nothing."""
    env = {**stack_env, "OPENROUTER_BASE_URL": trickling_llm.url,
           "DREAMING_CLAIM_STALE_SECS": "10", "LLM_TIMEOUT_SECS": "2",
           "EMBEDDING_TIMEOUT_SECS": "1", "PROVIDER_MAX_RETRIES": "0",
           "DREAMING_RETRY_BACKOFF_SECS": "0.5", "DREAMING_RETRY_BACKOFF_MAX_SECS": "1"}
    with engine.begin() as conn:
        stuck = add_session(conn, [mem_line("fact", 0.5, "TRICKLE held reply")])
        other = add_session(conn, [mem_line("fact", 0.5, "answered while the other waits")])
    worker = WorkerProcess(env, name="green", pool="gevent", concurrency=8, log_dir=tmp_path)
    try:
        worker.wait_ready()
        started = time.monotonic()
        _send(env, stuck)
        assert trickling_llm.trickling.wait(30), "the held request never arrived"
        _send(env, other)  # served by another greenlet while the first one is held
        wait_until(lambda: _session(engine, other)[2], timeout=20,
                   message="the other session classified while one reply is held")
        assert trickling_llm.trickling.is_set(), "the held reply ended before the other finished"
        wait_until(lambda: _session(engine, stuck)[0] == "retrying", timeout=20,
                   message="the soft time limit recorded the attempt as retrying")
        fired_after = time.monotonic() - started
        outcome, error, done = _session(engine, stuck)
        assert (outcome, done) == ("retrying", False)
        assert error is not None and "soft time limit" in error
        assert 6.0 <= fired_after < 8.5, f"soft limit fired after {fired_after:.1f}s, not ~7 s"
        trickling_llm.release.set()  # the model answers now: the retry must finish the job
        wait_until(lambda: _session(engine, stuck)[2], timeout=30,
                   message="the retried session classified")
        assert _memories(engine, stuck) == ["TRICKLE held reply"]
        assert _memories(engine, other) == ["answered while the other waits"]
        with engine.connect() as conn:
            runs = conn.execute(text("SELECT attempt, outcome FROM engine.classification_runs"
                                     " WHERE session_id = :i ORDER BY attempt"),
                                {"i": stuck}).all()
        assert [tuple(r) for r in runs][:1] == [(1, "retrying")]
        assert runs[-1].outcome != "retrying"
        assert "Hard time limit" not in worker.log()
    finally:
        worker.stop()


def test_a_gevent_worker_looks_the_guard_layer_up_before_it_consumes(
        stack_env: dict[str, str], tmp_path: Path) -> None:
    """The classify pipeline and the guard's meaning layer are made at start-up, not by the
    first tasks: those start all at once on a gevent worker, and each that got there before the
    first lookup answered read the layer's model from the database too. The layer's state is in
    the log by the time the worker says it is ready, before any task has run."""
    worker = WorkerProcess(stack_env, name="green-warm", pool="gevent", concurrency=4,
                           log_dir=tmp_path)
    try:
        worker.wait_ready()
        log = worker.log()
        assert re.search(r"memory guard meaning layer (on|unusable|off|training|unavailable)",
                         log), "the meaning layer was not looked up at start-up"
        assert "classify_session[" not in log
    finally:
        worker.stop()


def test_database_waits_overlap_on_one_gevent_worker(
        engine: Engine, stack_env: dict[str, str], tmp_path: Path) -> None:
    """Twelve classify tasks each block in PostgreSQL (the test holds their sessions' rows):
    with psycopg's waits yielding to gevent, all twelve wait at once in the one worker
    process; a blocking wait would let only one greenlet reach the database at a time."""
    n = 12
    with engine.begin() as conn:
        sids = [add_session(conn, [mem_line("fact", 0.5, f"overlap {i}")]) for i in range(n)]
    env = {**stack_env, "DATABASE_POOL_SIZE": str(n), "DATABASE_MAX_OVERFLOW": "2"}
    with _green_worker_on_held_rows(engine, env, sids, name="green-db", concurrency=n,
                                    log_dir=tmp_path) as (tx, holder_pid, _):
        wait_until(lambda: _waiting_on(engine, holder_pid) == n, timeout=8, interval=0.1,
                   message=f"{n} tasks of one gevent process waiting on the lock together")
        tx.rollback()
        wait_until(lambda: all(_session(engine, s)[2] for s in sids), timeout=30,
                   message="every session classified once the lock is gone")
        assert sorted(m for s in sids for m in _memories(engine, s)) == sorted(
            f"overlap {i}" for i in range(n))


def test_a_full_green_pool_holds_its_prefetch_and_starts_each_as_a_slot_frees(
        engine: Engine, stack_env: dict[str, str], tmp_path: Path) -> None:
    """A gevent worker runs Celery's blocking loop, which waits up to 2 s on the broker with
    no fetch registered while its prefetch is full, and Celery's gevent pool blocks that loop
    inside ``spawn`` while every slot is busy: it holds one message beyond its slots and
    refills each freed slot with a broker round trip, queued behind the finishing tasks' CPU.
    eros's pool (eros/tasks/green_pool.py) keeps fetching up to the prefetch (2 × its
    concurrency) and starts a waiting message the moment a slot frees. Here: 3 slots, 6
    messages, all held in PostgreSQL; all 6 leave the queue while only 3 run (Celery's pool:
    2 stay queued), and every session is classified once the rows are free."""
    with _full_green_pool(engine, stack_env, tmp_path, "reserved") as pool:
        assert _waiting_on(engine, pool.holder_pid) == N, \
            "the pool ran more tasks than its concurrency"
        pool.tx.rollback()
        wait_until(lambda: all(_session(engine, s)[2] for s in pool.sids), timeout=30,
                   message="every session classified once the rows are free")
    assert pool.memories() == pool.expected


@pytest.mark.parametrize("classify_only", [False, True], ids=["every-queue", "classify-only"])
def test_a_warm_shutdown_gives_the_waiting_messages_back_and_loses_none(
        engine: Engine, stack_env: dict[str, str], tmp_path: Path, classify_only: bool) -> None:
    """The messages waiting in eros's gevent pool are prefetched, not started: on a warm
    shutdown (SIGTERM) the running tasks finish, the waiting ones are never started and go
    back to the queue unacknowledged, and the next worker classifies each exactly once — on a
    worker of every queue (kombu's unacked copies in Redis) and on a classify-only one, which
    keeps none (kombu puts its prefetched messages back as its channel closes)."""
    with _full_green_pool(engine, stack_env, tmp_path, "handed back",
                          classify_only=classify_only) as pool:
        assert _unacked_copies(pool.broker, pool.sids) == (0 if classify_only else 2 * N)
        worker = pool.worker
        worker.proc.send_signal(signal.SIGTERM)  # warm shutdown, three tasks running
        wait_until(lambda: "warm shutdown" in worker.log().lower(), timeout=10,
                   interval=0.1, message="the worker began its warm shutdown")
        pool.tx.rollback()  # the running three can finish
        worker.proc.wait(timeout=30)
        done = [s for s in pool.sids if _session(engine, s)[2]]
        assert len(done) == N, "a waiting message was started during the shutdown"
        assert pool.broker.llen(pool.queue) == N, "the waiting messages are back in the queue"
        second = WorkerProcess(pool.env, name="green-after", pool="gevent", concurrency=N,
                               log_dir=tmp_path)
        try:
            second.wait_ready()
            wait_until(lambda: all(_session(engine, s)[2] for s in pool.sids), timeout=30,
                       message="the handed-back sessions classified by the next worker")
        finally:
            second.stop()
    assert pool.memories() == pool.expected


def test_a_killed_classify_only_worker_loses_no_session_and_duplicates_none(
        engine: Engine, stack_env: dict[str, str], tmp_path: Path, llm: FakeLLMServer) -> None:
    """A classify-only worker keeps no unacked copy of its messages in Redis (kombu's ack
    emulation off, eros/tasks/broker.py): SIGKILLed with tasks running and messages
    prefetched, those messages are gone from the broker, and the stale-claim rescue (beat's
    claim tick on a claim worker) sends each session again — every session classified once,
    its memories written once."""
    with engine.begin() as conn:
        expected = {add_session(conn, [mem_line("fact", 0.5, f"killed {i}")]): f"killed {i}"
                    for i in range(12)}
    queues = load_settings(redis_url=stack_env["REDIS_URL"],
                           database_url=stack_env["DATABASE_URL"])
    broker = redis.Redis.from_url(stack_env["REDIS_URL"])
    llm.set_latency(2.0)
    started: list[WorkerProcess | BeatProcess] = []
    try:
        claimer = WorkerProcess(stack_env, name="claimer", pool="solo", concurrency=1,
                                log_dir=tmp_path, queues=queues.eros_claim_queue)
        victim = WorkerProcess(stack_env, name="green-victim", pool="gevent", concurrency=4,
                               log_dir=tmp_path, queues=queues.eros_classify_queue)
        started += [claimer, victim]
        claimer.wait_ready()
        victim.wait_ready()
        assert "no unacked bookkeeping" in victim.log()
        started.append(BeatProcess(stack_env, log_dir=tmp_path, name="beat-killed"))
        wait_until(lambda: llm.request_count >= 4, timeout=60, message="tasks in flight")
        assert _unacked_copies(broker, list(expected)) == 0
        victim.kill()
        assert _unfinished(engine, expected) > 0
        llm.set_latency(0.0)
        rescuer = WorkerProcess(stack_env, name="green-rescuer", pool="gevent",
                                concurrency=4, log_dir=tmp_path,
                                queues=queues.eros_classify_queue)
        started.append(rescuer)
        rescuer.wait_ready()
        wait_until(lambda: _unfinished(engine, expected) == 0, timeout=120,
                   message="the killed worker's sessions re-claimed when stale and classified")
    finally:
        for process in reversed(started):
            process.stop()
        broker.close()
    for sid, text_ in expected.items():
        assert _memories(engine, sid) == [text_], sid
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.chat_sessions"
                                 " WHERE claim_token IS NOT NULL")).scalar_one() == 0


def _unfinished(engine: Engine, sids: Iterable[uuid.UUID]) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT count(*) FROM engine.chat_sessions WHERE id = ANY(:ids)"
            " AND classified_at IS NULL"), {"ids": list(sids)}).scalar_one())


def _unacked_copies(broker: redis.Redis, sids: list[uuid.UUID]) -> int:
    """Messages for these sessions that kombu's ack emulation holds in Redis's ``unacked``
    hash (handed to a worker, not acknowledged)."""
    wanted = [str(s) for s in sids]
    return sum(1 for raw in broker.hvals("unacked")
               if any(s in raw.decode(errors="replace") for s in wanted))


#: the full pool's slots; it is sent twice as many messages
N = 3


@dataclass
class FullPool:
    engine: Engine
    env: dict[str, str]
    sids: list[uuid.UUID]
    expected: list[str]
    broker: redis.Redis
    queue: str
    tx: RootTransaction
    holder_pid: int
    worker: WorkerProcess

    def memories(self) -> list[str]:
        return sorted(m for s in self.sids for m in _memories(self.engine, s))


@contextmanager
def _full_green_pool(engine: Engine, stack_env: dict[str, str], tmp_path: Path,
                     label: str, *, classify_only: bool = False) -> Iterator[FullPool]:
    """A gevent worker of N slots sent 2 × N messages for sessions whose rows are held: N
    running (each waiting on its row), the other N fetched from the queue and waiting in the
    pool."""
    with engine.begin() as conn:
        expected = [f"{label} {i}" for i in range(2 * N)]
        sids = [add_session(conn, [mem_line("fact", 0.5, text)]) for text in expected]
    env = {**stack_env, "DATABASE_POOL_SIZE": str(N + 2)}
    broker = redis.Redis.from_url(env.get("BROKER_URL") or env["REDIS_URL"])
    queue = _queue(env)
    try:
        with _green_worker_on_held_rows(engine, env, sids, name=f"green-{label.split()[0]}",
                                        concurrency=N, log_dir=tmp_path,
                                        queues=queue if classify_only else None
                                        ) as (tx, pid, worker):
            wait_until(lambda: _waiting_on(engine, pid) == N, timeout=15, interval=0.1,
                       message=f"{N} tasks filling the pool, each waiting on the held rows")
            wait_until(lambda: broker.llen(queue) == 0, timeout=10, interval=0.1,
                       message="every message fetched by the worker while its pool is full")
            yield FullPool(engine, env, sids, expected, broker, queue, tx, pid, worker)
    finally:
        broker.close()


def _queue(env: dict[str, str]) -> str:
    settings = load_settings(redis_url=env["REDIS_URL"], database_url=env["DATABASE_URL"])
    return settings.eros_classify_queue
