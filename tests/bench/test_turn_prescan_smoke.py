"""Smoke run of bench/turn_prescan_quality.py (seconds): a hash embedder and a few turns, every
variant measured (plain and centred sketches, all turns and the probed cells)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import turn_prescan_quality

pytestmark = pytest.mark.bench


def test_turn_prescan_quality_runs(pg_server_url: str, monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    out = tmp_path / "quality.json"
    assert turn_prescan_quality.main(["--smoke", "--pools", "50,400", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["turns"] == 300 and result["cells"] >= 4
    rows = {(r["centred"], r["share"] < 1, r["pool"]): r for r in result["rows"]}
    assert len(rows) == 8
    # a pool as large as the user's turns, all of them read: the exact answer
    assert rows[(False, False, 400)]["top50"] == rows[(True, False, 400)]["top50"] == 100.0
