"""Recall from a real streaming read replica (issue 27): served by the replica while it keeps
up, by the primary — and counted — when it lags or dies, answering throughout; and (issue 32)
when its WAL receiver is disconnected: received = replayed then, so the replay reading says 0,
but the primary's heartbeat stops arriving and recall goes back to the primary.

The replica is ``pg_basebackup -R`` of the test server, started on its own port and socket.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from eros.db.engine import get_replica_engine
from eros.db.replica_sql import replica_lag_ms
from eros.providers import make_embedder
from eros.recall.services import read_route
from eros.recall.services.recall import recall
from eros.settings import Settings, load_settings
from testkit.services import TemplateDatabases
from testkit.topology import Replica, replica_heartbeat, streaming_replica

#: generous: the recall's own budget, which a fallback must stay inside
STATEMENT_MS = 3000


@pytest.fixture(scope="module")
def primary_url(templates: TemplateDatabases) -> Iterator[str]:
    url = templates.clone()  # before the base backup, so the replica has it
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding)"
            " SELECT CAST(:u AS uuid), 'memory ' || g || ' about jazz', 'fact',"
            " (SELECT CAST(array_agg(random()) AS vector) FROM generate_series(1, 512))"
            " FROM generate_series(1, 40) g"), {"u": str(USER)})
    engine.dispose()
    yield url
    templates.drop(url)


USER = uuid.uuid4()


@pytest.fixture(scope="module")
def replica(pg_server_url: str, primary_url: str) -> Iterator[Replica]:
    # the primary's replica heartbeat runs throughout, as beat runs it in production
    with streaming_replica(pg_server_url) as running, replica_heartbeat(primary_url):
        yield running


def _settings(primary_url: str, replica: Replica, **extra: object) -> Settings:
    name = str(make_url(primary_url).database)
    return load_settings(database_url=primary_url, database_replica_url=replica.url(name),
                         eros_providers="offline", eros_offline_embedder="hash",
                         recall_statement_timeout_ms=STATEMENT_MS, **extra)


def _fallbacks(reason: str) -> float:
    return REGISTRY.get_sample_value("eros_recall_replica_fallbacks_total",
                                     {"reason": reason}) or 0.0


def _replica_clients(replica: Replica, database: str) -> int:
    """Client backends of the test database on the replica, besides this query's own (a
    recall's pooled connection stays there, idle, after it answered)."""
    engine = create_engine(replica.url(database), pool_size=1)
    with engine.connect() as conn:
        n = conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend' AND pid <> pg_backend_pid()")).scalar_one()
    engine.dispose()
    return int(n)


def _no_replica_clients(replica: Replica, database: str) -> int:
    """The replica's client backends of the test database once the ones just closed have
    exited: a backend leaves pg_stat_activity when its process ends, which follows the
    client's disconnect by a moment (longer on a loaded machine); polled up to 10 s."""
    deadline = time.monotonic() + 10
    while (n := _replica_clients(replica, database)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return n


def _wait_replayed(primary: Engine, replica: Replica, database: str) -> None:
    with primary.connect() as conn:
        lsn = conn.execute(text("SELECT pg_current_wal_lsn()")).scalar_one()
    engine = create_engine(replica.url(database), pool_size=1)
    deadline = time.monotonic() + 30
    with engine.connect() as conn:
        while conn.execute(text("SELECT pg_last_wal_replay_lsn() >= CAST(:l AS pg_lsn)"),
                           {"l": lsn}).scalar_one() is not True:
            if time.monotonic() > deadline:
                raise TimeoutError("the replica did not replay")
            time.sleep(0.05)
            conn.rollback()
    engine.dispose()


def test_recall_reads_the_replica_then_the_primary_when_it_lags(
        primary_url: str, replica: Replica) -> None:
    database = str(make_url(primary_url).database)
    # the smallest lag the shipped 1 s heartbeat allows (two periods: checked at start)
    settings = _settings(primary_url, replica, recall_max_replica_lag_ms=2000)
    primary = create_engine(primary_url)
    with primary.begin() as conn:  # a commit replayed since the replica started
        conn.execute(text("UPDATE engine.companion_memories SET importance = 0.5"))
    _wait_replayed(primary, replica, database)
    read_route.forget_failures()
    embedder = make_embedder(settings)
    replica_engine = get_replica_engine(settings)
    assert replica_engine is not None
    replica_engine.dispose()
    assert _no_replica_clients(replica, database) == 0
    result = recall(primary, embedder, USER, "jazz", settings=settings, strategy="decay", k=5)
    assert result.source == "replica" and len(result.memories) == 5
    assert result.to_dict()["source"] == "replica"
    assert _replica_clients(replica, database) == 1  # visible in its pg_stat_activity
    # the replica stops replaying while the primary writes: it is behind, by more than 0 ms
    admin = create_engine(replica.url(database), isolation_level="AUTOCOMMIT", pool_size=1)
    with admin.connect() as conn:
        conn.execute(text("SELECT pg_wal_replay_pause()"))
    try:
        with primary.begin() as conn:
            conn.execute(text("UPDATE engine.companion_memories SET importance = 0.9"
                              " WHERE user_id = :u"), {"u": USER})
        lagging = _fallbacks("lag")
        with admin.connect() as conn:  # wait until the replica has received the write
            deadline = time.monotonic() + 30
            while not conn.execute(text(
                    "SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()")).scalar_one():
                assert time.monotonic() < deadline, "the write never reached the replica"
                time.sleep(0.05)
            # the unreplayed write ages past the allowed lag (polled, not slept)
            while replica_lag_ms(conn, settings.recall_replica_heartbeat_secs) <= 2000:
                assert time.monotonic() < deadline, "the replica never fell 2 s behind"
                time.sleep(0.05)
        result = recall(primary, embedder, USER, "jazz", settings=settings, strategy="decay",
                        k=5)
        assert result.source == "primary" and len(result.memories) == 5
        assert all(m.importance == pytest.approx(0.9) for m in result.memories)  # fresh data
        assert _fallbacks("lag") == lagging + 1
        relaxed = _settings(primary_url, replica, recall_max_replica_lag_ms=3_600_000)
        assert recall(primary, embedder, USER, "jazz", settings=relaxed).source == "replica"
    finally:
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_wal_replay_resume()"))
        admin.dispose()
        primary.dispose()


def test_the_replica_killed_mid_run_recall_keeps_answering_from_the_primary(
        primary_url: str, replica: Replica) -> None:
    settings = _settings(primary_url, replica)
    primary = create_engine(primary_url)
    read_route.forget_failures()
    embedder = make_embedder(settings)
    answers: list[tuple[str, int, float]] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    first_on_replica = threading.Event()

    def recalls() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                result = recall(primary, embedder, USER, "jazz", settings=settings, k=3,
                                strategy="decay")
            except BaseException as err:
                errors.append(err)
                return
            answers.append((result.source, len(result.memories),
                            (time.perf_counter() - started) * 1000))
            if result.source == "replica":
                first_on_replica.set()

    down = _fallbacks("down")
    thread = threading.Thread(target=recalls)
    thread.start()
    try:
        assert first_on_replica.wait(timeout=30)
        replica.kill()
        killed_at = len(answers)
        deadline = time.monotonic() + 30
        while len(answers) < killed_at + 20 and not errors and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(timeout=60)
        primary.dispose()
        replica.start()  # for any later test of the module
        engine = get_replica_engine(settings)
        assert engine is not None
        engine.dispose()
    assert errors == []
    assert len(answers) >= killed_at + 20
    assert all(n == 3 for _, n, _ in answers)
    after = answers[killed_at + 1:]  # the one in flight at the kill may have been either
    assert {source for source, _, _ in after} == {"primary"}
    assert max(ms for _, _, ms in answers) < STATEMENT_MS
    assert _fallbacks("down") >= down + len(after)


def test_a_replica_cut_off_from_its_primary_is_not_caught_up(
        primary_url: str, replica: Replica) -> None:
    """Issue 32: recall kept reading a frozen replica and returned memories already erased on
    the primary. Streaming is stopped on the real replica (its primary_conninfo emptied and
    reloaded: the WAL receiver exits); a memory is then erased on the primary."""
    database = str(make_url(primary_url).database)
    settings = _settings(primary_url, replica, recall_max_replica_lag_ms=2000)
    primary = create_engine(primary_url)
    other = uuid.uuid4()
    with primary.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding)"
            " SELECT CAST(:u AS uuid), 'Goes to jazz bars', 'fact',"
            " (SELECT CAST(array_agg(random()) AS vector) FROM generate_series(1, 512))"),
            {"u": str(other)})
    _wait_replayed(primary, replica, database)
    read_route.forget_failures()
    embedder = make_embedder(settings)
    first = recall(primary, embedder, other, "jazz", settings=settings)
    assert first.source == "replica" and len(first.memories) == 1
    admin = create_engine(replica.url(database), isolation_level="AUTOCOMMIT", pool_size=1)
    with admin.connect() as conn:
        conninfo = conn.execute(text("SHOW primary_conninfo")).scalar_one()
        conn.execute(text("ALTER SYSTEM SET primary_conninfo = ''"))
        conn.execute(text("SELECT pg_reload_conf()"))
    try:
        def receiving() -> bool:
            with admin.connect() as conn:
                return bool(conn.execute(text(
                    "SELECT count(*) FROM pg_stat_wal_receiver")).scalar_one())
        deadline = time.monotonic() + 30
        while receiving():
            assert time.monotonic() < deadline, "the WAL receiver did not stop"
            time.sleep(0.05)
        with primary.begin() as conn:  # erased on the primary; the replica never hears of it
            conn.execute(text("DELETE FROM engine.companion_memories WHERE user_id = :u"),
                         {"u": other})
        with admin.connect() as conn:
            # the old reading: nothing received but not replayed, so "caught up"
            assert replica_lag_ms(conn) == 0.0
            deadline = time.monotonic() + 30
            while replica_lag_ms(conn, settings.recall_replica_heartbeat_secs) <= 2000:
                assert time.monotonic() < deadline, "the heartbeat never went overdue"
                time.sleep(0.1)
        lagging = _fallbacks("lag")
        result = recall(primary, embedder, other, "jazz", settings=settings)
        assert result.source == "primary" and result.memories == []
        assert _fallbacks("lag") == lagging + 1
    finally:
        with admin.connect() as conn:
            quoted = "'" + str(conninfo).replace("'", "''") + "'"  # no bind parameters here
            conn.execute(text(f"ALTER SYSTEM SET primary_conninfo = {quoted}"))
            conn.execute(text("SELECT pg_reload_conf()"))
        admin.dispose()
    _wait_replayed(primary, replica, database)  # streaming again, for later tests
    with admin.connect() as conn:
        assert replica_lag_ms(conn, settings.recall_replica_heartbeat_secs) <= 2000
    primary.dispose()
