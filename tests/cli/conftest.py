"""The CLI as a subprocess (``python -m eros``) with an explicit environment: nothing from the
developer's shell (DATABASE_URL, REDIS_URL, API keys) leaks in unless a test passes it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testkit.workers import BLAS_THREADS

ROOT = Path(__file__).resolve().parents[2]
_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", *BLAS_THREADS)


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Cli = Callable[..., Result]


def base_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _KEEP}
    env.update({"EROS_DATA_DIR": str(data_dir), "EROS_EMBEDDED": "never",
                "EMBEDDING_DIM": "512", "PYTHONUNBUFFERED": "1", "COLUMNS": "200"})
    env.update(extra)
    return env


def run_cli(env: dict[str, str], *args: str, timeout: float = 60.0) -> Result:
    proc = subprocess.run([sys.executable, "-m", "eros", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A data directory with a short path (Unix socket paths are limited to ~107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="eroscli", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cli_env(short_dir: Path) -> Callable[..., dict[str, str]]:
    def make(**extra: str) -> dict[str, str]:
        return base_env(short_dir, **extra)
    return make


@pytest.fixture
def cli(db_url: str, cli_env: Callable[..., dict[str, str]]) -> Cli:
    """Run ``eros ARGS...`` against this test's database; ``env=`` adds variables."""
    def call(*args: str, env: dict[str, str] | None = None, timeout: float = 60.0) -> Result:
        return run_cli(cli_env(DATABASE_URL=db_url, **(env or {})), *args, timeout=timeout)
    return call
