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


def test_fused_bench_scale_mode(pg_server_url: str, monkeypatch: pytest.MonkeyPatch,
                                tmp_path: Path) -> None:
    """The scale mode at a tiny size: the heavy user holds exactly their rows among the other
    users' (every turn a message, every memory citing turns), every strategy is measured."""
    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    out = tmp_path / "scale.json"
    assert fused_bench.main(["--background-memories", "400", "--background-turns", "1000",
                             "--memories", "60", "--turns", "100", "--users", "6",
                             "--queries", "4", "--cite", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert (result["heavy_memories"], result["heavy_turns"]) == (60, 100)
    assert (result["all_memories"], result["all_turns"]) == (400, 1000)
    assert set(result["strategies"]) == {"grouped", "decay", "composite", "fused"}
    for row in result["strategies"].values():
        assert row["p50_ms"] > 0 and sum(row["plans"].values()) == 4
