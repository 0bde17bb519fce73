"""The strings a rule's every match contains (eros/guard/core/guard_literals.py): a rule is only
skipped where it could not have matched."""

from __future__ import annotations

import re

import pytest

from eros.guard.core.guard import compact, load_guard, normalise
from eros.guard.core.guard_literals import any_of, required_strings
from eros.guard.core.guard_text import unjoined
from testkit.redteam.corpus import main_corpus


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"ignore (all|your) rules", {"ignore ", " rules"}),  # the longest run wins: one of two
    (r"(这个|你的)?(ai|助手)(的)?(真实|其实)", {"ai", "助手"}),
    (r"(?<!referee can )\b(ignore|forget)\b", {"ignore", "forget"}),
    (r"x{2,}y", {"x"}),
    (r"cat|dog", {"cat", "dog"}),
])
def test_required_strings(pattern: str, expected: set[str]) -> None:
    found = required_strings(re.compile(pattern))
    assert found is not None
    if pattern.startswith("ignore"):
        assert found in ({"ignore "}, {" rules"})
    else:
        assert found == expected


@pytest.mark.parametrize("pattern", [
    r"(?i)ignore", r"[a-z]+", r"\bx?\b", r"a|[bc]", r"(?i:abc)d?", r"(a)?\1", r".*", r"x*",
])
def test_no_requirement_where_none_is_certain(pattern: str) -> None:
    assert required_strings(re.compile(pattern)) is None
    assert any_of(None) is None


def test_a_rule_skipped_could_not_have_matched() -> None:
    """Every shipped rule on every view of the red-team corpus's memories and turns: where the
    rule matches, its strings are found (so the skip never changes a verdict); most rules have
    strings, or the skip would spare nothing."""
    rules = load_guard().rules
    assert sum(r.needs is not None for r in rules) >= len(rules) * 3 // 4
    views: set[str] = set()
    for case in main_corpus():
        for text in (case.memory, *(t for _, t in case.turns)):
            view = normalise(text)
            views.update((view, compact(view)))
            joined = unjoined(view)
            if joined is not None:
                views.update((joined, compact(joined)))
    matched = 0
    for rule in rules:
        for view in views:
            if rule.pattern.search(view):
                matched += 1
                assert rule.needs is None or rule.needs.search(view), (rule.id, view)
    assert matched > 100  # the corpus exercises the rules
