"""Database engines, one per process: pools are created after a fork, never inherited."""

from __future__ import annotations

import os
import time
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.pool import ConnectionPoolEntry, NullPool

from eros.core.green import green_process
from eros.core.retry import UNMIGRATED_SQLSTATES, sqlstate
from eros.db import dimension_sql, hnsw_index
from eros.db.timeouts import connect_options, local_timeouts
from eros.errors import ConfigError, ServiceUnavailable
from eros.settings import Settings

_engines: dict[tuple[int, str, str, str], Engine] = {}

#: a gevent worker's pool when DATABASE_POOL_SIZE is not set (plus DATABASE_MAX_OVERFLOW, held
#: too: :func:`configured_pool`). Its greenlets share the process's connections; a pool below
#: their peak demand opens and closes overflow connections all the time (a backend start
#: each). Drain bench, 128 in flight: 24 held instead of 5 cut PostgreSQL's CPU per session by
#: about a third and raised throughput 17–42 %.
GREEN_POOL_SIZE = 24
#: libpq's connect timeout (seconds) to the primary, and to the read replica: a replica that
#: does not answer must not hold a recall for long (libpq rounds anything below 2 up to 2).
CONNECT_TIMEOUT_SECS = 10
REPLICA_CONNECT_TIMEOUT_SECS = 2
#: a pooled connection idle longer than this is pinged before use (see ``_ping_when_idle``).
PING_IDLE_SECS = 1.0
_CHECKIN = "eros_checkin"


def make_engine(url: str, *, pool_size: int | None = None, max_overflow: int | None = None,
                settings: Settings | None = None,
                connect_timeout: int = CONNECT_TIMEOUT_SECS) -> Engine:
    """A pooled engine; with ``settings`` its connections carry the DATABASE_* timeouts and
    the pool is sized by DATABASE_POOL_SIZE / DATABASE_MAX_OVERFLOW (explicit arguments win).

    Pool size 0 means no pool (``NullPool``: a connection per transaction, closed after it),
    for PgBouncer in transaction mode, which does the pooling across every worker instead.
    DATABASE_POOL_MODE=transaction (PgBouncer in transaction mode, where consecutive
    transactions of one client may run on different server connections) turns off psycopg's
    server-side prepared statements (``prepare_threshold=None``: a statement prepared on a
    server connection would meet the next client's, SQLSTATE 42P05) and sends no libpq
    ``options`` (PgBouncer 1.18 refuses that startup parameter): the timeouts are set at the
    start of every transaction with ``SET LOCAL`` instead (:func:`_timeouts_per_transaction`).
    """
    connect_args: dict[str, object] = {"connect_timeout": connect_timeout}
    pooled = settings is not None and settings.database_pool_mode == "transaction"
    if pooled:
        connect_args["prepare_threshold"] = None
    elif settings is not None:
        connect_args["options"] = connect_options(settings)
    size, extra = configured_pool(settings) if settings is not None else (5, 5)
    if pool_size is not None:  # an explicit size (the CLI's short-lived engines) wins
        size, extra = pool_size, settings.database_max_overflow if settings is not None else 5
    overflow = max_overflow if max_overflow is not None else extra
    pool_args: dict[str, Any] = (
        {"poolclass": NullPool} if size == 0 else {"pool_size": size, "max_overflow": overflow})
    engine = create_engine(url, **pool_args, pool_recycle=1800, connect_args=connect_args,
                           # an error's message never carries a statement's parameters (text)
                           hide_parameters=True)
    _ping_when_idle(engine)
    if pooled and settings is not None:
        _timeouts_per_transaction(engine, settings)
    return engine


def _timeouts_per_transaction(engine: Engine, settings: Settings) -> None:
    """Behind PgBouncer in transaction mode: the DATABASE_*_TIMEOUT_MS limits, ``SET LOCAL``
    as each transaction begins (one round trip), so they bind this client's transaction and
    never leak to the next client of the server connection. An AUTOCOMMIT connection (the
    ``CREATE INDEX CONCURRENTLY`` of a dimension change) runs without them."""
    statement = local_timeouts(settings)

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        driver = conn.connection.driver_connection
        if driver.autocommit:  # an attribute, no round trip (get_isolation_level is two)
            return
        # on the driver connection: psycopg opens the transaction (with the isolation level
        # SQLAlchemy set on it) with this statement, and SQLAlchemy's own execute would
        # re-enter the begin being dispatched
        driver.execute(statement)


def _ping_when_idle(engine: Engine) -> None:
    """Ping a pooled connection before use only when it has sat idle over PING_IDLE_SECS.

    ``pool_pre_ping`` pings on every checkout: a round trip (and a SELECT for the server) per
    transaction, three per classified session. A connection checked in moments ago
    is almost surely alive; one that idled through a provider call or a quiet spell is pinged,
    and a dead one is replaced before anything runs on it (DisconnectionError makes the pool
    reconnect, SQLAlchemy's documented pessimistic recipe). A server restart that lands inside
    the idle window surfaces as a disconnect error on the next statement instead: SQLAlchemy
    then invalidates the whole pool, and the task retries that like any database outage.
    """
    dialect = engine.dialect

    @event.listens_for(engine.pool, "connect")
    def _fresh(_dbapi: Any, record: ConnectionPoolEntry) -> None:
        record.info[_CHECKIN] = time.monotonic()

    @event.listens_for(engine.pool, "checkin")
    def _checked_in(_dbapi: Any, record: ConnectionPoolEntry) -> None:
        record.info[_CHECKIN] = time.monotonic()

    @event.listens_for(engine.pool, "checkout")
    def _checkout(dbapi: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        if time.monotonic() - record.info.get(_CHECKIN, 0.0) <= PING_IDLE_SECS:
            return
        try:
            alive = dialect.do_ping(dbapi)
        except Exception as err:
            raise DisconnectionError("pooled connection failed its ping") from err
        if not alive:
            raise DisconnectionError("pooled connection failed its ping")



def configured_pool(settings: Settings) -> tuple[int, int]:
    """Held connections and overflow: DATABASE_POOL_SIZE and DATABASE_MAX_OVERFLOW, except on
    a gevent worker where DATABASE_POOL_SIZE is not set: GREEN_POOL_SIZE + the overflow, all
    held, none opened and closed.

    Why held: SQLAlchemy closes an overflow connection as soon as it is checked in. A green
    pool's demand crosses its size in every wave of replies (more so on a busy machine, where
    a greenlet holding a connection waits for the CPU), so the same few overflow slots were
    opened and closed over and over; each was a new PostgreSQL backend, whose first
    statements pay the catalog caches, the trigger functions' compilation and custom plans
    (its connection and first session ~15 ms more PostgreSQL CPU than on a warm connection,
    ~4.5 ms, on a busy machine; a loaded drain at 128 in flight opened 35 for 1,024
    sessions: bench/RESULTS.md, issue 34). The ceiling is the same (24 + 5 by default), so the
    connection planning in docs/operations.md is unchanged; the pool still opens connections
    only as demand first reaches them."""
    if "database_pool_size" in settings.model_fields_set or not green_process():
        return settings.database_pool_size, settings.database_max_overflow
    held = max(settings.database_pool_size, GREEN_POOL_SIZE) + settings.database_max_overflow
    return held, 0


def configured_pool_size(settings: Settings) -> int:
    """The connections the pool holds (:func:`configured_pool`)."""
    return configured_pool(settings)[0]


def get_engine(settings: Settings) -> Engine:
    """This process's engine for ``DATABASE_URL`` (a forked child builds its own)."""
    return _cached(settings.require_database_url(), settings, CONNECT_TIMEOUT_SECS)


def get_replica_engine(settings: Settings) -> Engine | None:
    """This process's engine for ``DATABASE_REPLICA_URL``, None when it is not set."""
    if not settings.database_replica_url:
        return None
    return _cached(settings.database_replica_url, settings, REPLICA_CONNECT_TIMEOUT_SECS)


def _cached(url: str, settings: Settings, connect_timeout: int) -> Engine:
    key = (os.getpid(), url, connect_options(settings), settings.database_pool_mode)
    engine = _engines.get(key)
    if engine is None:
        for stale in [k for k in _engines if k[0] != os.getpid()]:
            _engines.pop(stale).dispose(close=False)
        engine = _engines[key] = make_engine(url, settings=settings,
                                             connect_timeout=connect_timeout)
    return engine


def dispose_all() -> None:
    """Forget inherited pools without closing the parent's sockets (call after fork)."""
    for key in list(_engines):
        _engines.pop(key).dispose(close=False)


def check_database(engine: Engine, settings: Settings) -> None:
    """Fail at start-up, naming the variable, if the database is unreachable or mismatched."""
    try:
        with engine.connect() as conn:
            dim = dimension_sql.column_dimension(conn, "embedding")
            conn.execute(text("SELECT 1"))
            hnsw = hnsw_index.state(conn)
    except OperationalError as err:
        raise ServiceUnavailable(
            f"cannot connect to DATABASE_URL ({safe_url(str(engine.url))}): "
            f"{str(err.orig).strip().splitlines()[0] if err.orig else err}") from None
    except DBAPIError as err:
        if sqlstate(err) in UNMIGRATED_SQLSTATES:
            raise ServiceUnavailable(
                "the database has no eros schema: run `eros migrate` (alembic upgrade head)"
            ) from None
        raise
    if dim is not None and dim != settings.embedding_dim:
        raise ConfigError(f"EMBEDDING_DIM is {settings.embedding_dim} but "
                          f"engine.companion_memories.embedding is vector({dim})")
    hnsw_index.require(settings, hnsw)  # a configured plan reads a missing index


def safe_url(url: str) -> str:
    """A URL with any password masked, fit for logs and error messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable url>"
