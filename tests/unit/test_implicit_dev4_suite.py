"""The fourth implicit-recall development set (bench/implicit_dev4_data.py, issue 31's eighth
round) is what its script writes, loads as a suite, holds small users (~30 memories: a
memory-only answer has them all within 500 tokens), and every remark is a statement whose
evidence is an observation citing the confided turn."""

from __future__ import annotations

import json

from bench.implicit_dev4_data import OUT, build
from eros.core.text import estimate_tokens
from eros.evaluation.core.suite import load_suite_text


def test_the_committed_suite_is_what_the_script_writes() -> None:
    assert json.loads(OUT.read_text(encoding="utf-8")) == build()


def test_small_users_whose_remarks_are_statements_citing_a_confided_turn() -> None:
    suite = load_suite_text(OUT.read_text(encoding="utf-8"))
    assert len(suite.questions) == 36
    assert {u.language for u in suite.users} == {"en", "es", "de", "fr", "pt", "it"}
    turns = {t.id: t.content for u in suite.users for s in u.sessions for t in s.turns}
    cited: dict[str, set[str]] = {}
    for u in suite.users:
        observations = [o for s in u.sessions for o in s.observations]
        assert 25 <= len(observations) <= 35  # a small user, not only the confidences
        assert sum(estimate_tokens(o.text) + 1 for o in observations) <= 500
        for o in observations:
            for tid in o.turns:
                cited.setdefault(tid, set()).add(o.text)
    for q in suite.questions:
        assert "?" not in q.question and "¿" not in q.question
        assert q.evidence_turns
        for tid in q.evidence_turns:
            assert cited[tid] & set(q.evidence)
            assert q.question not in turns[tid]
