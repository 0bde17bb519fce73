"""Database engines, one per process: pools are created after a fork, never inherited."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import DisconnectionError, OperationalError
from sqlalchemy.pool import ConnectionPoolEntry, NullPool

from eros.db import repo
from eros.db.timeouts import connect_options
from eros.errors import ConfigError, ServiceUnavailable
from eros.settings import Settings

_engines: dict[tuple[int, str, str], Engine] = {}

#: a gevent worker's pool when DATABASE_POOL_SIZE is not set. Its greenlets share the process's
#: connections; a pool below their peak demand opens and closes overflow connections all the
#: time (a backend start each). Drain bench, 128 in flight: 24 held instead of 5 cut
#: PostgreSQL's CPU per session by about a third and raised throughput 17–42 %.
GREEN_POOL_SIZE = 24
#: a pooled connection idle longer than this is pinged before use (see ``_ping_when_idle``).
PING_IDLE_SECS = 1.0
_CHECKIN = "eros_checkin"


def make_engine(url: str, *, pool_size: int | None = None, max_overflow: int | None = None,
                settings: Settings | None = None) -> Engine:
    """A pooled engine; with ``settings`` its connections carry the DATABASE_* timeouts and
    the pool is sized by DATABASE_POOL_SIZE / DATABASE_MAX_OVERFLOW (explicit arguments win).

    Pool size 0 means no pool (``NullPool``: a connection per transaction, closed after it),
    for PgBouncer in transaction mode, which does the pooling across every worker instead."""
    connect_args: dict[str, object] = {"connect_timeout": 10}
    if settings is not None:
        connect_args["options"] = connect_options(settings)
    size = pool_size if pool_size is not None else (
        configured_pool_size(settings) if settings is not None else 5)
    overflow = max_overflow if max_overflow is not None else (
        settings.database_max_overflow if settings is not None else 5)
    pool_args: dict[str, Any] = (
        {"poolclass": NullPool} if size == 0 else {"pool_size": size, "max_overflow": overflow})
    engine = create_engine(url, **pool_args, pool_recycle=1800, connect_args=connect_args,
                           # an error's message never carries a statement's parameters (text)
                           hide_parameters=True)
    _ping_when_idle(engine)
    return engine


def _ping_when_idle(engine: Engine) -> None:
    """Ping a pooled connection before use only when it has sat idle over PING_IDLE_SECS.

    ``pool_pre_ping`` pings on every checkout: a round trip (and a SELECT for the server) per
    transaction, three per classified session (issue 17). A connection checked in moments ago
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



def green_process() -> bool:
    """True in a process whose sockets gevent has patched (a ``--pool=gevent`` worker: Celery
    patches before it imports the app). Never imports gevent itself."""
    monkey = sys.modules.get("gevent.monkey")
    return bool(monkey is not None and monkey.is_module_patched("socket"))


def configured_pool_size(settings: Settings) -> int:
    """DATABASE_POOL_SIZE when set; otherwise its default, or GREEN_POOL_SIZE on gevent."""
    if "database_pool_size" in settings.model_fields_set or not green_process():
        return settings.database_pool_size
    return max(settings.database_pool_size, GREEN_POOL_SIZE)


def get_engine(settings: Settings) -> Engine:
    """This process's engine for ``DATABASE_URL`` (a forked child builds its own)."""
    url = settings.require_database_url()
    key = (os.getpid(), url, connect_options(settings))
    engine = _engines.get(key)
    if engine is None:
        for stale in [k for k in _engines if k[0] != os.getpid()]:
            _engines.pop(stale).dispose(close=False)
        engine = _engines[key] = make_engine(url, settings=settings)
    return engine


def dispose_all() -> None:
    """Forget inherited pools without closing the parent's sockets (call after fork)."""
    for key in list(_engines):
        _engines.pop(key).dispose(close=False)


def check_database(engine: Engine, settings: Settings) -> None:
    """Fail at start-up, naming the variable, if the database is unreachable or mismatched."""
    try:
        with engine.connect() as conn:
            dim = repo.embedding_dimension(conn)
            conn.execute(text("SELECT 1"))
    except OperationalError as err:
        raise ServiceUnavailable(
            f"cannot connect to DATABASE_URL ({safe_url(str(engine.url))}): "
            f"{str(err.orig).strip().splitlines()[0] if err.orig else err}") from None
    except Exception as err:  # undefined table → not migrated
        if "companion_memories" in str(err) or "does not exist" in str(err):
            raise ServiceUnavailable(
                "the database has no eros schema: run `eros migrate` (alembic upgrade head)"
            ) from None
        raise
    if dim is not None and dim != settings.embedding_dim:
        raise ConfigError(f"EMBEDDING_DIM is {settings.embedding_dim} but "
                          f"engine.companion_memories.embedding is vector({dim})")


def safe_url(url: str) -> str:
    """A URL with any password masked, fit for logs and error messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable url>"
