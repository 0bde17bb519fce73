"""Real ``celery worker`` processes for end-to-end tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: numpy's BLAS thread counts: a developer's own values reach the workers a test starts (eros
#: itself defaults OPENBLAS/MKL to one thread a process, eros/__init__.py)
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def worker_env(db_url: str, redis_url: str, llm_url: str | None, voyage_url: str | None,
               **extra: str) -> dict[str, str]:
    """An explicit environment: nothing from the developer's shell leaks into a worker."""
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "SYSTEMROOT",
                    *BLAS_THREADS)}
    env.update({
        "DATABASE_URL": db_url,
        "REDIS_URL": redis_url,
        "EMBEDDING_DIM": "512",
        "DREAMING_IDLE_SECS": "60",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": str(ROOT),
    })
    if llm_url:
        env.update({"OPENROUTER_API_KEY": "test-key", "OPENROUTER_BASE_URL": llm_url})
    if voyage_url:
        env.update({"VOYAGE_API_KEY": "test-key", "VOYAGE_BASE_URL": voyage_url})
    env.update(extra)
    return env


class WorkerProcess:
    """``celery -A eros.worker worker`` as a child process in its own process group."""

    def __init__(self, env: Mapping[str, str], *, name: str, concurrency: int = 4,
                 pool: str = "prefork", log_dir: Path, queues: str | None = None,
                 extra_args: tuple[str, ...] = (), loglevel: str = "INFO") -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        args = [sys.executable, "-m", "celery", "-A", "eros.worker", "worker",
                f"--loglevel={loglevel}", f"--pool={pool}", f"--concurrency={concurrency}",
                f"--hostname={name}@%h", "--without-gossip", "--without-mingle",
                "--without-heartbeat", *extra_args]
        if queues:
            args.append(f"--queues={queues}")
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, env=dict(env), cwd=ROOT, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited: {self.log()[-3000:]}")
            if " ready." in self.log():
                return
            time.sleep(0.2)
        raise TimeoutError(f"worker {self.name} not ready: {self.log()[-3000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def child_pids(self) -> list[int]:
        """The prefork pool's processes (the ones that run tasks)."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def kill(self) -> None:
        """SIGKILL the whole worker, pool processes included: no chance to ack or clean up."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def terminate(self, timeout: float = 60.0) -> None:
        """SIGTERM: Celery's warm shutdown, finishing running tasks."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.terminate(timeout=20)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.25,
               message: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {message}")


class BeatProcess:
    """``celery -A eros.worker beat`` with its state file in a temporary directory."""

    def __init__(self, env: Mapping[str, str], *, log_dir: Path, name: str = "beat",
                 loglevel: str = "INFO") -> None:
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        args = [sys.executable, "-m", "celery", "-A", "eros.worker", "beat",
                f"--loglevel={loglevel}",
                f"--schedule={log_dir / (name + '-state')}"]
        self.proc = subprocess.Popen(args, env=dict(env), cwd=ROOT, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        self._log.close()
