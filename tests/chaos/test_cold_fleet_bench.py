"""The cold-fleet benchmark's smoke run (bench/cold_fleet_bench.py): a fresh database with no
guard model, a fleet of Procfile workers, layer on against layer off, through its real
``main``. Seconds of draining, no disruption: the full run (400 sessions, restarts and a
SIGKILL, a busy machine) is recorded in bench/RESULTS.md."""

from __future__ import annotations

import pytest

from bench import cold_fleet_bench
from testkit.chaos.harness import Servers

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]


def test_cold_fleet_bench_smoke(servers: Servers, capsys: pytest.CaptureFixture[str]) -> None:
    code = cold_fleet_bench.main(["--sessions", "20", "--rounds", "1", "--busy", "0",
                                  "--workers", "2", "--no-chaos"], servers)
    printed = capsys.readouterr().out
    assert code == 0, printed
    rows = {cells[2]: cells for line in printed.splitlines()
            if line.startswith("| 1 |") and (cells := [c.strip() for c in line.split("|")])}
    on, off = rows["layer on, no model yet"], rows["layer off"]
    # the fleet trained the model once at start-up (the bank's requests), the baseline never
    assert int(on[6]) > 0 and int(off[6]) == 0, printed
    # then one embedding request per session with candidates, in both variants
    assert on[7] == off[7] == "1.000", printed
    assert on[9] == off[9] == "yes", printed
    assert "layer on / layer off" in printed
