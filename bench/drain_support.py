"""Process plumbing for the drain benchmark: fake provider servers as separate processes, and
memory / CPU accounting of process trees from /proc.

CPU is accounted per component because on a small shared box the drain is CPU-bound before it
is latency-bound; knowing which process spends the CPU says what to fix.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_TICK = os.sysconf("SC_CLK_TCK")


class FakeServer:
    """A fake provider API as a separate process (``python -m testkit.fakes.<module>``).

    Started by the constructor; ``wait_ready`` waits for its port (start several, then wait)."""

    def __init__(self, module: str, latency_ms: float, log_dir: Path) -> None:
        self.module, self.log_dir = module, log_dir
        self._port_file = log_dir / f"{module}.port"
        self._log = open(log_dir / f"{module}.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", f"testkit.fakes.{module}", "--port", "0",
             "--latency-ms", str(latency_ms), "--port-file", str(self._port_file)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=self._log,
            stderr=subprocess.STDOUT, start_new_session=True)
        self.root = self.url = ""

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self._port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.module} did not start; see {self.log_dir}")
            time.sleep(0.05)
        self.root = f"http://127.0.0.1:{int(self._port_file.read_text())}"
        self.url = f"{self.root}/v1"

    def requests(self) -> int:
        """API requests served so far (``/_fake/stats``)."""
        with urllib.request.urlopen(f"{self.root}/_fake/stats", timeout=5) as response:
            return int(json.load(response)["request_count"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()


def descendants(pids: list[int]) -> set[int]:
    """The given processes and every live descendant."""
    seen: set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as fh:
                todo.extend(int(p) for p in fh.read().split())
        except OSError:
            pass
    return seen


def tree_memory(pids: list[int]) -> tuple[float, float]:
    """RSS and PSS (MB) summed over the process trees. RSS double-counts the pages prefork
    children share copy-on-write with their parent; PSS splits shared pages fairly."""
    rss = pss = 0
    for pid in descendants(pids):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def tree_cpu(roots: list[int]) -> float:
    """CPU seconds of the trees: live processes, plus what the roots' reaped children used
    (a PostgreSQL backend that exited is in its postmaster's cutime)."""
    total = 0
    for pid in descendants(roots):
        try:
            fields = _stat(pid)
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
        if pid in roots:
            total += int(fields[13]) + int(fields[14])  # cutime, cstime
    return total / _TICK


def machine_busy() -> float:
    """CPU seconds all cores spent not idle since boot (every process, ours and others')."""
    with open("/proc/stat") as fh:
        values = [int(v) for v in fh.readline().split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return (sum(values[:8]) - idle) / _TICK


@dataclass
class CpuMeter:
    """CPU seconds per component between ``start`` and ``stop``."""

    groups: dict[str, list[int]]
    used: dict[str, float] = field(default_factory=dict)
    _before: dict[str, float] = field(default_factory=dict)
    _wall: float = 0.0

    def start(self) -> None:
        self._before = {name: tree_cpu(pids) for name, pids in self.groups.items()}
        self._before["machine"] = machine_busy()
        self._wall = time.monotonic()

    def stop(self) -> None:
        self.used = {name: tree_cpu(pids) - self._before[name]
                     for name, pids in self.groups.items()}
        self.used["machine (all processes)"] = machine_busy() - self._before["machine"]
        self.used["wall"] = time.monotonic() - self._wall

    def table(self, sessions: int) -> str:
        cores = os.cpu_count() or 1
        wall = self.used["wall"]
        lines = [f"{'component':<26} {'CPU s':>7} {'ms/session':>10} {'cores':>6}"]
        for name, secs in self.used.items():
            if name == "wall":
                continue
            lines.append(f"{name:<26} {secs:>7.1f} {1000 * secs / sessions:>10.1f} "
                         f"{secs / wall:>6.2f}")
        lines.append(f"{'(available)':<26} {cores * wall:>7.1f} {'':>10} {cores:>6.2f}")
        return "\n".join(lines)


def postmaster_pid(data_directory: str) -> list[int]:
    """The postmaster's pid, from ``postmaster.pid`` in the data directory; none when the
    server is not on this machine (or not readable), and PostgreSQL's CPU is not counted."""
    try:
        return [int(Path(data_directory, "postmaster.pid").read_text().split()[0])]
    except (OSError, ValueError, IndexError):
        return []


def terminate_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def call_latencies(ports: list[int]) -> str:
    """Mean LLM and embedding call latency as the tasks saw it (``--metrics``: the workers'
    Prometheus histograms), to tell slow calls from time spent elsewhere in a task."""
    if not ports:
        return ""
    sums: dict[str, float] = {}
    for port in ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            for line in resp.read().decode().splitlines():
                m = re.match(r"eros_(llm|embedding)_latency_seconds_(sum|count)(?:\{[^}]*\})? "
                             r"([0-9.e+-]+)$", line)
                if m:
                    key = f"{m.group(1)}_{m.group(2)}"
                    sums[key] = sums.get(key, 0.0) + float(m.group(3))
    parts = [f"{kind} call mean {sums[kind + '_sum'] / sums[kind + '_count']:.3f}s"
             for kind in ("llm", "embedding") if sums.get(kind + "_count")]
    return "; " + ", ".join(parts) if parts else "; no latency metrics scraped"


def task_times(logs: list[str], concurrency: int, wall: float, *,
               ideal: float) -> str:
    """Task durations as Celery logged them, and how busy the pool was: tells time lost
    inside tasks (slow calls, CPU starvation) from time lost between them (dispatch)."""
    durations = sorted(float(m) for log in logs
                       for m in re.findall(r"classify_session\[[^\]]+\] succeeded in ([0-9.]+)s",
                                           log))
    if not durations:
        return "no task durations found in the worker logs"
    def pct(q: float) -> float:
        return durations[min(len(durations) - 1, int(q * len(durations)))]
    busy = sum(durations) / (concurrency * wall)
    return (f"{len(durations)} tasks, duration median {pct(0.5):.3f}s p90 {pct(0.9):.3f}s "
            f"p99 {pct(0.99):.3f}s (ideal {ideal:.2f}s); "
            f"pool busy {100 * busy:.0f}% of {concurrency} slots over the drain")
