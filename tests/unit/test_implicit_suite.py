"""The implicit-recall checks (bench/implicit_data.py: the two development sets;
bench/implicit_holdout_data.py: the held-out set) are what their scripts write, load as
suites, and every question's evidence is an observation citing the confided turn. The second
held-out set (bench/implicit_holdout2_suite.json, issue 31's fifth round) and the third
(bench/implicit_holdout3_suite.json, written before the sixth round, its observations added by
a second blind session) and the fourth (bench/implicit_holdout4_suite.json, written before the
eighth round, observations by the same blind session) and the fifth
(bench/implicit_holdout5_suite.json, written before the ninth round) were written by sessions
that saw neither the recall code nor the other sets; their generators stayed outside the
repository, so only their shape is checked here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import implicit_holdout_data
from bench.implicit_data import HEAVY_OUT, OUT, build
from eros.evaluation.core.suite import load_suite_text

HOLDOUT2 = Path(implicit_holdout_data.OUT).with_name("implicit_holdout2_suite.json")
HOLDOUT3 = Path(implicit_holdout_data.OUT).with_name("implicit_holdout3_suite.json")
HOLDOUT4 = Path(implicit_holdout_data.OUT).with_name("implicit_holdout4_suite.json")
HOLDOUT5 = Path(implicit_holdout_data.OUT).with_name("implicit_holdout5_suite.json")


@pytest.mark.parametrize(("path", "heavy"), [(OUT, False), (HEAVY_OUT, True)])
def test_the_committed_suites_are_what_the_script_writes(path: Path, heavy: bool) -> None:
    assert json.loads(Path(path).read_text(encoding="utf-8")) == build(heavy=heavy)


def test_the_committed_held_out_suite_is_what_its_script_writes() -> None:
    written = json.loads(implicit_holdout_data.OUT.read_text(encoding="utf-8"))
    assert written == implicit_holdout_data.build()


@pytest.mark.parametrize(("path", "questions"),
                         [(OUT, 36), (HEAVY_OUT, 36), (implicit_holdout_data.OUT, 30),
                          (HOLDOUT2, 36), (HOLDOUT3, 42),
                          (HOLDOUT4, 42), (HOLDOUT5, 48)])
def test_every_remark_cites_a_confided_turn_with_its_observation(path: Path,
                                                                 questions: int) -> None:
    suite = load_suite_text(Path(path).read_text(encoding="utf-8"))
    assert len(suite.questions) == questions
    turns = {t.id: t.content for u in suite.users for s in u.sessions for t in s.turns}
    cited: dict[str, set[str]] = {}
    for o in (o for u in suite.users for s in u.sessions for o in s.observations):
        for tid in o.turns:
            cited.setdefault(tid, set()).add(o.text)
    for q in suite.questions:
        assert q.evidence_turns
        for tid in q.evidence_turns:
            assert cited[tid] & set(q.evidence)
            assert q.question not in turns[tid]
