"""Process handles shared by the embedded servers: which eros processes use a server (a pid
list under a file lock), pruned of processes that died without unregistering."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

#: AF_UNIX paths are limited to 108 bytes including the terminator on Linux (104 on macOS).
MAX_SOCKET_PATH = 100


def alive(pid: int) -> bool:
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
def flock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_pids(path: Path) -> list[int]:
    try:
        values = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [int(v) for v in values if isinstance(v, int)] if isinstance(values, list) else []


def prune_pids(path: Path) -> list[int]:
    """Drop pids of processes that died without unregistering; returns the live ones."""
    pids = read_pids(path)
    live = [p for p in pids if alive(p)]
    if live != pids:
        path.write_text(json.dumps(live))
    return live
