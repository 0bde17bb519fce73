"""Smoke run of ``bench.ledger_bench`` (issue 33) at a tiny size: it exits 0, serves full
pages and the playground, and reports positive times. Nothing is recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]


def test_ledger_bench(pg_server_url: str, tmp_path: Path) -> None:
    out = tmp_path / "ledger.json"
    env = {**os.environ, "EROS_BENCH_DATABASE_URL": pg_server_url, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.ledger_bench", "--memories", "300", "--others", "100",
         "--repeats", "2", "--size", "20", "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert doc["first_page"]["memories_shown"] >= 20 and doc["first_page"]["median_ms"] > 0
    assert doc["last_page"]["bytes"] > 0
    assert doc["playground"]["recall_median_ms"] > 0 < doc["playground"]["page_median_ms"]
    assert "playground overhead" in proc.stdout
