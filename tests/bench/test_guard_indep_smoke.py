"""Smoke run of ``bench/guard_indep.py`` (leave one independent set out, issue 30 thirteenth
round) in seconds: vectors without meaning, two blind sets, a few cases each. No held-out set is
read or named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import guard_indep
from bench.guard_dev import HELD
from bench.guard_loso import GROUPS

pytestmark = pytest.mark.bench


def test_each_blind_set_is_judged_by_models_that_never_saw_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "rows.jsonl"
    argv = ["--vectors", "hash", "--folds", "tuned-10,tuned-11", "--limit", "3",
            "--models", str(tmp_path / "models"), "--dump", str(dump)]
    assert guard_indep.main(argv) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in dump.read_text("utf-8").splitlines()]
    assert {r["fold"] for r in rows} == {"tuned-10", "tuned-11"} and len(rows) == 12
    # a cell per rule (meaning alone, the band rule, the stack) on every fold and overall
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()}
    assert all(lines[k].count("%") == 6 for k in ("tuned-10", "tuned-11", "all"))
    # the report is a function of the dumped rows alone
    assert guard_indep.main(["--load", str(dump), "--folds", "tuned-10,tuned-11"]) == 0
    again = capsys.readouterr().out
    assert again.splitlines()[-4:] == out.splitlines()[-4:]
    assert not any(name in out for name in HELD)


def test_the_folds_are_the_blind_sets_and_never_a_held_out_one() -> None:
    held = {f for group in HELD.values() for f in group}
    assert set(guard_indep.INDEPENDENT) <= set(GROUPS)
    assert not {f for name in guard_indep.INDEPENDENT for f in GROUPS[name][1]} & held
