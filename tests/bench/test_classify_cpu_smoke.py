"""Smoke run of ``bench/classify_cpu_bench.py`` at a tiny size (seconds): it exits 0, both
variants classify every session with its three memories, and the counts it reports are the
classify path's (two transactions and four statements per session; pings only with
pre-ping). Nothing is recorded in bench/RESULTS.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import classify_cpu_bench

pytestmark = pytest.mark.bench

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "RESULTS.md"


def test_classify_cpu_bench(pg_server_url: str, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    before = RESULTS.read_bytes()
    out = tmp_path / "cpu.json"
    assert classify_cpu_bench.main(["--sessions", "8", "--rounds", "1",
                                    "--json", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert [m["label"] for m in runs[0]] == ["pre-ping", "ours"]
    for m in runs[0]:
        assert m["sessions"] == 8
        assert m["memories"] == (8 + 5) * classify_cpu_bench.MEMORIES_PER_SESSION
        assert m["worker_ms"] > 0
        assert (m["statements"], m["transactions"]) == (4.0, 2.0)
    assert [m["pings"] for m in runs[0]] == [2.0, 0.0]
    assert RESULTS.read_bytes() == before
