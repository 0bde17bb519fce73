"""The third and fourth implicit-recall development sets (bench/implicit_dev3_data.py, issue
31's seventh round; bench/implicit_dev4_data.py, its eighth) are what their scripts write, load
as suites, and every remark is a statement whose evidence is an observation citing the
confided turn. The fourth holds small users (~30 memories: a memory-only answer has them all
within 500 tokens)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import implicit_dev3_data, implicit_dev4_data
from eros.core.text import estimate_tokens
from eros.evaluation.core.suite import load_suite_text

#: each set's script, its observations a user, and the most tokens they render in (None: any)
SETS = [(implicit_dev3_data.OUT, implicit_dev3_data.build, 40, 80, None),
        (implicit_dev4_data.OUT, implicit_dev4_data.build, 25, 35, 500)]


@pytest.mark.parametrize(("out", "build"), [s[:2] for s in SETS])
def test_the_committed_suite_is_what_the_script_writes(
        out: Path, build: Callable[[], dict[str, Any]]) -> None:
    assert json.loads(out.read_text(encoding="utf-8")) == build()


@pytest.mark.parametrize(("out", "least", "most", "tokens"), [(s[0], *s[2:]) for s in SETS])
def test_every_remark_is_a_statement_citing_a_confided_turn_with_its_observation(
        out: Path, least: int, most: int, tokens: int | None) -> None:
    suite = load_suite_text(out.read_text(encoding="utf-8"))
    assert len(suite.questions) == 36
    assert {u.language for u in suite.users} == {"en", "es", "de", "fr", "pt", "it"}
    turns = {t.id: t.content for u in suite.users for s in u.sessions for t in s.turns}
    cited: dict[str, set[str]] = {}
    for u in suite.users:
        observations = [o for s in u.sessions for o in s.observations]
        assert least <= len(observations) <= most  # everyday notes, not only the confidences
        if tokens is not None:
            assert sum(estimate_tokens(o.text) + 1 for o in observations) <= tokens
        for o in observations:
            for tid in o.turns:
                cited.setdefault(tid, set()).add(o.text)
    for q in suite.questions:
        assert "?" not in q.question and "¿" not in q.question
        assert q.evidence_turns
        for tid in q.evidence_turns:
            assert cited[tid] & set(q.evidence)
            assert q.question not in turns[tid]
