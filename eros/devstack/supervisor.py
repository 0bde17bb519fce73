"""Process supervision for ``eros run``: the Celery children started in order, watched, and
stopped in reverse order; signals that stop them; one run per data directory."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from eros.errors import ErosError

log = logging.getLogger("eros.run")


class Stopped(BaseException):
    """A stop signal arrived (a BaseException so no ``except Exception`` swallows it)."""


def _pdeathsig() -> None:  # pragma: no cover - runs in the forked child
    """Linux: the child gets SIGTERM if the supervisor dies, even by SIGKILL."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Supervisor:
    """Celery children: started in order, watched, stopped in reverse order."""

    def __init__(self, env: dict[str, str], log_dir: Path | None = None) -> None:
        self.env = env
        self.log_dir = log_dir
        self.children: list[tuple[str, Any, IO[bytes] | None]] = []

    def spawn(self, name: str, argv: list[str]) -> None:
        import subprocess

        out: IO[bytes] | None = None
        if self.log_dir is not None:
            out = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop()
        proc = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT if out else None, process_group=0,
                                preexec_fn=_pdeathsig if sys.platform == "linux" else None)
        self.children.append((name, proc, out))
        log.info("started %s (pid %d)", name, proc.pid)

    def check(self) -> None:
        """Raise if a child exited: the job is not running any more."""
        for name, proc, _ in self.children:
            code = proc.poll()
            if code is not None:
                where = f"; see {self.log_dir / (name + '.log')}" if self.log_dir else ""
                raise ErosError(f"celery {name} exited with code {code}{where}")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM each child, newest first (beat before the worker), then wait."""
        for name, proc, _ in reversed(self.children):
            if proc.poll() is None:
                log.info("stopping %s (pid %d)", name, proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout)
                except Exception:  # TimeoutExpired, or interrupted by a second signal
                    log.warning("%s did not stop within %.0fs; killing it", name, timeout)
                    self.kill()
        self.kill()  # whatever is left, pool processes included
        for _, _, out in self.children:
            if out is not None:
                out.close()

    def kill(self) -> None:
        for _, proc, _ in self.children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)


class Signals:
    """SIGINT/SIGTERM/SIGHUP: the first raises :class:`Stopped`; any later one (or one that
    arrives while already stopping) kills the children instead of waiting for them."""

    def __init__(self) -> None:
        self.stopping = False
        self.supervisor: Supervisor | None = None
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: object) -> None:
        if not self.stopping:
            self.stopping = True
            log.warning("%s received: stopping (again to force)", signal.Signals(signum).name)
            raise Stopped(signum)
        log.warning("%s received again: killing the workers", signal.Signals(signum).name)
        if self.supervisor is not None:
            self.supervisor.kill()


@contextlib.contextmanager
def run_lock(root: Path) -> Iterator[None]:
    """One ``eros run`` per data directory (two would share a beat state file)."""
    path = root / "run.lock"
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            other = handle.read().strip() or "?"
            raise ErosError(f"another `eros run` (pid {other}) is using {root}; stop it, or set "
                            "EROS_DATA_DIR to run a second one elsewhere") from None
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
