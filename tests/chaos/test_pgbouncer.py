"""The production topology's pooler, for real (issue 27): 1,000 sessions drained through
PgBouncer 1.18 in transaction mode with a small pool by the Procfile's two worker kinds — a
prefork worker and a gevent classify worker of 128 — then a consolidation pass, recall cells,
recall, forget and a re-embed through the same pooler: zero errors, every session classified
once, and PostgreSQL's connections to the database never above the pool size.

The margin over the pool size is zero here: every eros process goes through PgBouncer, and the
test's own direct connections (seeding, checking) are made before the workers start and after
the drain. In production the margin is what bypasses the pooler: migrations on
DATABASE_MIGRATE_URL (one connection while they run) and an operator's psql
(docs/operations.md, "Production topology").
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from celery import Celery
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from testkit.chaos.harness import CHAOS_ENV, Servers, seed, verify
from testkit.fakes import FakeLLMServer, FakeVoyageServer, Reply
from testkit.services import with_database
from testkit.topology import PgBouncer, Unavailable, pgbouncer
from testkit.workers import BeatProcess, WorkerProcess, wait_until, worker_env
from tests.support.memories import copy_rows, random_unit

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]
SESSIONS = 1000
#: PgBouncer's server connections for the database (max_db_connections = default_pool_size)
POOL = 8
HEAVY_ROWS = 600
RESULTS: dict[str, Any] = {}


@pytest.fixture(scope="module")
def bouncer(servers: Servers) -> Iterator[PgBouncer]:
    try:
        with pgbouncer(servers.pg.url, pool_size=POOL) as running:
            yield running
    except Unavailable as err:
        pytest.skip(str(err))


class ConnectionWatch:
    """Samples PostgreSQL's client backends on one database from another database's
    connection (so the watcher is never counted), every 50 ms, keeping the maximum."""

    def __init__(self, server_url: str, database: str) -> None:
        self.engine = create_engine(with_database(server_url, "postgres"), pool_size=1)
        self.database = database
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.engine.connect() as conn:
            while not self._stop.is_set():
                n = int(conn.execute(text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = :d"
                    " AND backend_type = 'client backend'"), {"d": self.database}).scalar_one())
                conn.rollback()
                self.peak, self.samples = max(self.peak, n), self.samples + 1
                self._stop.wait(0.05)

    def __enter__(self) -> ConnectionWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.engine.dispose()


def _pair(engine: Engine) -> uuid.UUID:
    """A user with two near-duplicate memories, one superseding the other."""
    user, now = uuid.uuid4(), datetime.now(UTC)
    with engine.begin() as conn:
        for content, cos, days in (("Lives in Shanghai", 1.0, 400), ("Moved to Tokyo", 0.9, 7)):
            vec = [0.0] * 512
            vec[0], vec[1] = cos, (1 - cos * cos) ** 0.5
            conn.execute(text(
                "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
                " created_at) VALUES (:u, :c, 'fact', :e, :t)"),
                {"u": user, "c": content, "e": str(vec), "t": now - timedelta(days=days)})
    return user


def _errors(log_dir: Path) -> list[str]:
    """Worker log lines at ERROR or above, and any database error (retried or not)."""
    bad = []
    for path in log_dir.glob("*.log"):
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                if "Traceback" in line or "ERROR" in line:
                    bad.append(f"{path.name}: {line[:300]}")
                continue
            if isinstance(event, dict) and (
                    event.get("level") in ("ERROR", "CRITICAL")
                    or "database error" in str(event.get("event", ""))):
                bad.append(f"{path.name}: {line[:300]}")
    return bad


def test_a_drain_and_every_use_through_pgbouncer_in_transaction_mode(
        servers: Servers, bouncer: PgBouncer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    direct_url = servers.fresh_database("pgbouncer")
    database = str(make_url(direct_url).database)
    pooled_url = bouncer.url(database)
    direct = create_engine(direct_url)
    llm, voyage = FakeLLMServer().start(), FakeVoyageServer().start()
    expected = seed(direct, SESSIONS, random.Random(27))
    pair = _pair(direct)
    heavy = uuid.uuid4()
    vectors = random_unit(np.random.default_rng(27), HEAVY_ROWS)
    copy_rows(direct_url, ((heavy, None, f"heavy {i}", "fact", 0.5, datetime.now(UTC),
                            vectors[i]) for i in range(HEAVY_ROWS)))
    direct.dispose()  # from here on, only the pooler reaches the database
    env = worker_env(pooled_url, servers.redis.url, llm.url, voyage.url, **{
        **CHAOS_ENV, "DATABASE_POOL_MODE": "transaction", "DATABASE_POOL_SIZE": "0",
        "DATABASE_MIGRATE_URL": direct_url, "RECALL_CELL_MIN_ROWS": "500",
        "RECALL_EXACT_SCAN_BELOW": "100", "CONSOLIDATION_INTERVAL_SECS": "3600",
        "REEMBED_BATCH": "500",
        # the pooler, not stale claims, is under test: a soft time limit of 42 s rather than
        # 10 s, so a shared machine's load does not cut tasks queued for a server connection
        "DREAMING_CLAIM_STALE_SECS": "60", "EROS_VISIBILITY_TIMEOUT_SECS": "180"})
    workers = [WorkerProcess(env, name="prefork", concurrency=4, log_dir=tmp_path),
               WorkerProcess(env, name="classify", pool="gevent", concurrency=128,
                             queues="eros.classify", log_dir=tmp_path)]
    beat: BeatProcess | None = None
    pooled = create_engine(pooled_url, pool_size=1,
                           connect_args={"prepare_threshold": None})
    client = Celery(broker=servers.redis.url, backend=servers.redis.url)
    try:
        for worker in workers:
            worker.wait_ready(timeout=90)
        with ConnectionWatch(servers.pg.url, database) as watch:
            started = time.monotonic()
            beat = BeatProcess(env, log_dir=tmp_path)

            def unfinished() -> bool:
                with pooled.connect() as conn:
                    return int(conn.execute(text(
                        "SELECT count(*) FROM engine.chat_sessions WHERE classified_at IS NULL"
                        " AND dead_lettered_at IS NULL")).scalar_one()) == 0
            wait_until(unfinished, timeout=150, interval=0.5, message="the drain")
            drain_s = time.monotonic() - started
            # every other use, through the same pooler, by the workers
            answer = {"clusters": [{"cluster": 1, "canonical": {
                "content": "Moved to Tokyo", "category": "fact", "importance": 0.8},
                "duplicates": [2], "superseded": [1]}]}
            llm.set_responder(lambda _: Reply(json.dumps(answer)))
            client.send_task("eros.consolidate_user", kwargs={"user_id": str(pair)},
                             queue="eros.consolidate")
            client.send_task("eros.cluster_memories", kwargs={"user_id": str(heavy)},
                             queue="eros.consolidate")

            def one(sql: str, **params: object) -> Any:
                with pooled.connect() as conn:
                    return conn.execute(text(sql), params).scalar()
            wait_until(lambda: one("SELECT last_outcome FROM engine.consolidation_state"
                                   " WHERE user_id = :u", u=pair) == "consolidated",
                       timeout=60, message="the consolidation pass")
            wait_until(lambda: one("SELECT count(*) FROM engine.memory_cells WHERE user_id = :u",
                                   u=heavy) > 0, timeout=60, message="the recall cells")
            recalled = client.send_task("eros.recall", kwargs={
                "user_id": str(heavy), "query": "heavy", "k": 5, "strategy": "decay"},
                queue="eros.recall").get(timeout=60)
            with pooled.connect() as conn:
                one_memory = conn.execute(text(
                    "SELECT id FROM engine.companion_memories WHERE user_id = :u LIMIT 1"),
                    {"u": heavy}).scalar_one()
            forgot = client.send_task("eros.forget_user", kwargs={
                "user_id": str(pair)}, queue="eros.claim").get(timeout=60)
            forgot_one = client.send_task("eros.forget_memory", kwargs={
                "memory_id": str(one_memory)}, queue="eros.claim").get(timeout=60)
            client.send_task("eros.reembed_memories", kwargs={"model": "voyage-4-lite"},
                             queue="eros.consolidate")

            def reembedded() -> bool:
                with pooled.connect() as conn:
                    return int(conn.execute(text(
                        "SELECT count(*) FROM engine.companion_memories WHERE embedding_model"
                        " IS DISTINCT FROM 'voyage-4-lite'")).scalar_one()) == 0
            wait_until(reembedded, timeout=90, interval=0.5, message="the re-embed")
        total_s = time.monotonic() - started
        with pooled.connect() as conn:
            RESULTS["left"] = tuple(conn.execute(text(
                "SELECT count(*) FILTER (WHERE user_id = :p), count(*) FILTER (WHERE user_id = :h)"
                " FROM engine.companion_memories"), {"p": pair, "h": heavy}).one())
        result = verify(create_engine(direct_url), expected, "pgbouncer", drain_s, [])
    finally:
        if beat is not None:
            beat.stop()
        for worker in workers:
            worker.stop()
        pooled.dispose()
        llm.stop()
        voyage.stop()
    errors = _errors(tmp_path)
    RESULTS.update(drain_s=drain_s, total_s=total_s, peak=watch.peak, samples=watch.samples)
    with capsys.disabled():
        print(f"\npgbouncer transaction mode, pool {POOL}: {SESSIONS} sessions drained in "
              f"{drain_s:.1f}s, all uses done in {total_s:.1f}s; PostgreSQL client backends "
              f"on the database peaked at {watch.peak} ({watch.samples} samples); "
              f"{len(errors)} error lines")
    assert result.ok and result.classified == SESSIONS and result.dead_lettered == 0, result
    assert errors == [], errors[:10]
    assert "DuplicatePreparedStatement" not in bouncer.log
    assert recalled["plan"] == "cells" and len(recalled["memories"]) == 5, recalled["plan"]
    assert forgot["outcome"] == "forgotten" and forgot_one["outcome"] == "forgotten"
    assert RESULTS["left"] == (0, HEAVY_ROWS - 1)  # the pair user gone, one heavy memory
    assert 0 < watch.peak <= POOL, watch.peak
