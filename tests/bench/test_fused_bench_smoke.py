"""Smoke run of bench/fused_bench.py at a tiny size (seconds): both strategies measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import fused_bench

pytestmark = pytest.mark.bench


def test_fused_bench_runs(pg_server_url: str, monkeypatch: pytest.MonkeyPatch,
                          tmp_path: Path) -> None:
    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    out = tmp_path / "fused.json"
    assert fused_bench.main(["--memories", "50", "--turns", "80", "--queries", "5",
                             "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["memories"] == 50 and result["turns"] == 80
    for strategy in ("composite", "fused"):
        assert result["strategies"][strategy]["p50_ms"] > 0


def test_fused_bench_runs_with_cited_turns(pg_server_url: str, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    out = tmp_path / "fused.json"
    assert fused_bench.main(["--memories", "50", "--turns", "80", "--queries", "5",
                             "--cite", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["cite"] == 2 and result["strategies"]["fused"]["p50_ms"] > 0
