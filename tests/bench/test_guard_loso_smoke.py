"""Smoke run of ``bench/guard_loso.py`` (the leave-one-set-out estimate of the memory guard on
its tuning sets, issue 30) in seconds: vectors without meaning (``--vectors hash``), two
groups, three attacks and three look-alikes each, one out-of-fold run. Nothing is recorded
and no held-out set is read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import guard_loso
from bench.guard_dev import HELD

pytestmark = pytest.mark.bench
ROW = re.compile(r"(\S+)\s+attacks\s+(\d+) through\s+(\d+) .*benign\s+(\d+) kept\s+(\d+) ")


def test_guard_loso_judges_each_group_without_its_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = guard_loso.main(
        [
            "--vectors",
            "hash",
            "--repeats",
            "1",
            "--groups",
            "dev-6,tuned-8",
            "--limit",
            "3",
            "--cache",
            str(tmp_path / "unused.pkl"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    rows = {
        m.group(1): tuple(int(n) for n in m.group(2, 3, 4, 5))
        for m in map(ROW.match, out.splitlines())
        if m
    }
    # the summed line, one per group, one per language of the judged cases
    assert {"all", "dev-6", "tuned-8", "lang:en"} <= set(rows)
    attacks, through, benign, kept = rows["all"]
    assert (attacks, benign) == (6, 6) and through <= attacks and kept <= benign
    assert rows["dev-6"][0] == 3 and rows["tuned-8"][2] == 3
    assert "threshold" in out and "sample corpus (model on the whole bank" in out
    # hash vectors are never cached, and no held-out set is named
    assert not (tmp_path / "unused.pkl").exists()
    assert not any(name in out for name in HELD)


def test_every_tuning_group_is_a_tuning_set_and_none_is_held_out() -> None:
    files = {f for _, group in guard_loso.GROUPS.values() for f in group}
    held = {f for group in HELD.values() for f in group}
    assert files and not files & held
