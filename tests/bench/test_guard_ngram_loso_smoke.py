"""Smoke run of ``bench/guard_ngram_loso.py`` (leave-one-set-out: the shipped guard against the
guard fused with the character n-gram classifier, issue 30 twelfth round) in seconds: vectors
without meaning, two groups, three attacks and three look-alikes each, a small training set.
No held-out set is read or named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import guard_ngram_loso
from bench.guard_dev import HELD

pytestmark = pytest.mark.bench
CELL = re.compile(r"(\d+)/(\d+)\s+\S+%\s+\S+%")


def test_each_group_is_judged_by_both_rules_without_its_own_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--vectors", "hash", "--groups", "dev-6,tuned-8", "--limit", "3",
            "--kept", "0.99", "0.995", "--models", str(tmp_path / "models")]
    assert guard_ngram_loso.main(argv) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: CELL.findall(line) for line in out.splitlines()
            if line.split() and line.split()[0] in ("all", "dev-6", "tuned-8")}
    # a cell per rule (meaning, fused at each kept share), the fused never lets more through
    assert len(rows["all"]) == 3 and all(int(a) == 6 for _, a in rows["all"])
    meaning, *fused = (int(t) for t, _ in rows["all"])
    assert all(f <= meaning for f in fused)
    # each fold's n-gram models are kept: a second run fits nothing and prints the same
    assert len(list((tmp_path / "models").iterdir())) == 2 * 2
    assert guard_ngram_loso.main(argv) == 0
    assert capsys.readouterr().out == out
    assert not any(name in out for name in HELD)


def test_the_training_data_leaves_out_the_judged_group_and_every_held_out_set() -> None:
    held = {f for group in HELD.values() for f in group}
    assert not {f for _, files in guard_ngram_loso.GROUPS.values() for f in files} & held
    texts, _ = guard_ngram_loso.training_data("tuned-8", limit=3)
    own, _ = guard_ngram_loso.labelled(["tuned-8"], 3)
    assert own and not set(own) & set(texts)
