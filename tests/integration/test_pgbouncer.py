"""eros behind a real PgBouncer in transaction mode (issue 27): no server-side prepared
statement, no session state, the timeouts per transaction, re-embed's guard per transaction.

PgBouncer (Debian's package) is started on a free port with a pool of two server connections,
so consecutive transactions of one client land on different server connections and a server
connection passes between clients all the time — the conditions that broke 24 of 200 sessions.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from eros.db.engine import make_engine
from eros.providers import make_embedder
from eros.recall.services.reembed import ReembedBusy, Reembedder
from eros.settings import Settings, load_settings
from testkit.fakes import FakeVoyageServer
from testkit.topology import PgBouncer, Unavailable, pgbouncer

POOL = 2


@pytest.fixture(scope="module")
def bouncer(pg_server_url: str) -> Iterator[PgBouncer]:
    try:
        with pgbouncer(pg_server_url, pool_size=POOL) as running:
            yield running
    except Unavailable as err:
        pytest.skip(str(err))


def _through(bouncer: PgBouncer, db_url: str) -> str:
    return bouncer.url(str(make_url(db_url).database))


def _settings(url: str, mode: str = "transaction", **extra: object) -> Settings:
    return load_settings(database_url=url, database_pool_mode=mode, **extra)


def _two_clients(url: str, settings: Settings | None) -> list[BaseException]:
    """Two clients take turns running the same parameterised statement, each turn its own
    transaction: PgBouncer hands the server connection the one just released to the other
    (its default is last in, first out), and psycopg prepares a statement on the server at
    its 5th run unless told not to."""
    engines = [make_engine(url, settings=settings) if settings is not None
               else create_engine(url, pool_size=1) for _ in range(2)]
    errors: list[BaseException] = []
    try:
        for n in range(12):
            for engine in engines:
                try:
                    with engine.begin() as conn:
                        conn.execute(text(
                            "SELECT count(*) FROM engine.chat_sessions WHERE user_id = :u"
                            " AND last_active_at < now() + make_interval(secs => :n)"),
                            {"u": uuid.uuid4(), "n": n})
                except Exception as err:
                    errors.append(err)
    finally:
        for engine in engines:
            engine.dispose()
    return errors


def test_transaction_mode_prepares_nothing_on_the_server(bouncer: PgBouncer, db_url: str) -> None:
    url = _through(bouncer, db_url)
    assert _two_clients(url, _settings(url)) == []


def test_without_the_mode_two_clients_collide_on_a_prepared_statement(
        bouncer: PgBouncer, db_url: str) -> None:
    """The failure the mode prevents, reproduced: psycopg's default prepares the statement on
    a server connection that the other client then gets (42P05, or 26000 'does not exist')."""
    errors = _two_clients(_through(bouncer, db_url), None)
    assert errors, "no collision: the test no longer exercises server-side prepares"
    assert any("prepared statement" in str(e) for e in errors), errors


def test_transaction_mode_sends_no_options_and_sets_the_timeouts_per_transaction(
        bouncer: PgBouncer, db_url: str) -> None:
    url = _through(bouncer, db_url)
    session = make_engine(url, settings=_settings(url, mode="session"))
    with pytest.raises(Exception, match="options"):  # PgBouncer 1.18 refuses the parameter
        session.connect()
    session.dispose()
    engine = make_engine(url, settings=_settings(
        url, database_statement_timeout_ms=4321, database_lock_timeout_ms=1234,
        database_idle_in_transaction_timeout_ms=5678))
    try:
        with engine.connect() as conn:
            shown = conn.execute(text(
                "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'),"
                " current_setting('idle_in_transaction_session_timeout')")).one()
            conn.commit()
        assert tuple(shown) == ("4321ms", "1234ms", "5678ms")
        # a transaction at another isolation level (export, the consolidation read) keeps it
        with engine.connect() as conn, \
                conn.execution_options(isolation_level="REPEATABLE READ").begin():
            assert tuple(conn.execute(text(
                "SELECT current_setting('transaction_isolation'),"
                " current_setting('statement_timeout')")).one()) == ("repeatable read", "4321ms")
        # an AUTOCOMMIT connection (CREATE INDEX CONCURRENTLY) is left alone
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            assert conn.execute(text("SHOW statement_timeout")).scalar_one() == "0"
        # nothing stayed on the server connections for the next client
        plain = create_engine(url, pool_size=1, connect_args={"prepare_threshold": None})
        for _ in range(POOL * 2):
            with plain.connect() as conn:
                assert conn.execute(text("SHOW statement_timeout")).scalar_one() == "0"
        plain.dispose()
    finally:
        engine.dispose()


def test_reembed_guard_is_held_by_a_transaction_through_the_pooler(
        bouncer: PgBouncer, db_url: str, voyage: FakeVoyageServer) -> None:
    url = _through(bouncer, db_url)
    settings = _settings(url, voyage_api_key="k", voyage_base_url=voyage.url,
                         provider_max_retries=0, reembed_batch=2)
    engine = make_engine(url, settings=settings)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding)"
            " SELECT gen_random_uuid(), 'memory ' || g, 'fact',"
            " (SELECT CAST(array_agg(0.01) AS vector) FROM generate_series(1, 512))"
            " FROM generate_series(1, 5) g"))
    worker = Reembedder(settings, engine, make_embedder(settings, model="voyage-4-lite"))
    holder = make_engine(url, settings=settings)
    try:
        with holder.connect() as conn, conn.begin():  # another run's guard, via the pooler
            assert conn.execute(text(
                "SELECT pg_try_advisory_xact_lock(hashtext('eros.reembed'))")).scalar_one()
            with pytest.raises(ReembedBusy):
                worker.run()
        rival = Reembedder(settings, engine, make_embedder(settings, model="voyage-4-lite"))
        rivals: list[str] = []

        def meanwhile(_rows: int) -> None:
            """Between two batches (no transaction of the run open but its guard's), another
            run through the pooler must find the guard taken, on whatever server connection
            it lands (a session lock would let the one on the guard's connection in)."""
            try:
                rival.run(max_seconds=0)
                rivals.append("ran")
            except ReembedBusy:
                rivals.append("busy")

        report = worker.run(on_batch=meanwhile)
        assert report.finished and report.done == 5 and report.batches == 3
        assert rivals == ["busy"] * 3
        # no advisory lock outlived the run on any server connection
        direct = create_engine(db_url, pool_size=1)
        with direct.connect() as conn:
            assert conn.execute(text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).scalar_one() == 0
        direct.dispose()
    finally:
        holder.dispose()
        engine.dispose()
