"""Smoke run of ``bench.tombstone_bench`` (issue 26) at a tiny size: it exits 0, reads the
same claimed sessions on both sides, skips the tombstoned turns after, reports positive
times. Nothing is recorded (``bench/RESULTS.md`` and ``bench/out/`` are left alone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]


def test_tombstone_bench(pg_server_url: str, tmp_path: Path) -> None:
    out = tmp_path / "tombstone.json"
    env = {**os.environ, "EROS_BENCH_DATABASE_URL": pg_server_url, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.tombstone_bench", "--size", "10000", "--repeats", "2",
         "--filler", "500", "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert doc["data"]["chat_sessions"] == 10_000 and doc["data"]["chat_messages"] == 400
    assert doc["data"]["sessions_with_erased_seqs"] > 500
    # 100 claimed sessions, four turns each before; the floors and erased turns skip some
    assert doc["turns_read"]["before"] == 400 > doc["turns_read"]["after"] > 0
    for side in ("before", "after"):
        assert all(v > 0 for v in doc["median_ms"][side].values())
    assert doc["median_ratio"]["claim"] > 0 and doc["median_ratio"]["reads"] > 0
    assert "claim of 100 after/before" in proc.stdout
