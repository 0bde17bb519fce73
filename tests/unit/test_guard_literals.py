"""The strings a rule's every match contains (eros/guard/core/guard_literals.py): a rule is only
skipped where it could not have matched."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from eros.guard.core.guard import compact, load_guard, normalise
from eros.guard.core.guard_literals import any_of, required_strings
from eros.guard.core.guard_secret_words import (
    CODE_WORD,
    CODE_WORDS,
    ID_WORD,
    ID_WORDS,
    PASSWORD,
    PASSWORD_WORDS,
)
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


def test_a_requirement_within_the_limit_is_preferred() -> None:
    """A run of 70 verbs is longer than "@" but more strings than a rule's screen holds: the
    one "@" is taken (issue 34: "send … to an address" was searched on every text)."""
    verbs = "|".join(f"{chr(97 + i % 26)}{chr(97 + i // 26)}erb" for i in range(70))
    assert required_strings(re.compile(rf"\b({verbs})\b.{{0,80}}\w+@\w+")) == {"@"}
    address = next(r for r in load_guard().rules if r.id == "en.send-to-address")
    assert address.strings == {"@"}


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


def _corpus_views() -> set[str]:
    views: set[str] = set()
    for case in main_corpus():
        for text in (case.memory, *(t for _, t in case.turns)):
            view = normalise(text)
            views.update((view, compact(view)))
    return views


def test_the_rule_index_leaves_out_only_rules_that_cannot_match() -> None:
    """The guard's per-view index (one pass for all the rules' strings) keeps every rule that
    matches a view, and only rules whose strings the view holds (what ``needs`` finds)."""
    guard = load_guard()
    index = guard.index
    assert index is not None
    for view in _corpus_views():
        packed = compact(view)
        mask = index.text.mask(view) | index.compact.mask(packed)
        for i, rule in enumerate(guard.rules):
            target = view if rule.view == "text" else packed
            needed = rule.needs is None or rule.needs.search(target) is not None
            assert bool(mask >> i & 1) == needed, (rule.id, view)


def test_a_replaced_guard_keeps_its_index_only_for_the_same_rules() -> None:
    guard = load_guard()
    assert replace(guard, max_chars=20_000).index is guard.index
    fewer = replace(guard, rules=guard.rules[:3])
    assert fewer.index is not guard.index and fewer.index is not None
    assert fewer.index.rules is fewer.rules


def test_the_case_folding_facts_the_case_free_screen_rests_on() -> None:
    """``str.lower`` is one character for every code point but "İ", and the engine's extra
    case classes are closed: so where an IGNORECASE search finds a word, the folded text holds
    the folded word."""
    from re import _casefix  # type: ignore[attr-defined]

    two = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and len(chr(c).lower()) != 1]
    assert two == [0x130]
    classes = _casefix._EXTRA_CASES
    assert all(key in classes[other] for key, others in classes.items() for other in others)


@pytest.mark.parametrize("text", [
    "ΚΩΔΙΚΌΣ ΠΡΌΣΒΑΣΗΣ: Ab12cd", "κωδικός πρόσβασης abc123", "PİN 4821", "Paſſword: hunter22",
    "PASSWORD: x1y2z3", "Пароль: Ромашка_1987", "密码是 abc123", "my SSN is 123-45-6789",
    "Your OTP code is 4821", "zip code 90210", "ATM pin 1234", "nothing here at all",
])
def test_the_case_free_screen_never_skips_a_match(text: str) -> None:
    for pattern, screen in ((PASSWORD, PASSWORD_WORDS), (ID_WORD, ID_WORDS),
                            (CODE_WORD, CODE_WORDS)):
        assert screen.candidates is not None  # the words are known: the screen does skip
        for variant in (text, text.upper(), text.lower(), text.swapcase()):
            if pattern.search(variant):
                assert screen.may_match(variant), (pattern.pattern[:20], variant)


def test_the_case_free_screen_on_the_corpus() -> None:
    """Every red-team text in every case: a word-list pattern that matches is never screened
    out, and ordinary texts are (or the screen would spare nothing)."""
    skipped = 0
    for case in main_corpus():
        for text in (case.memory, *(t for _, t in case.turns)):
            for variant in (text, text.upper()):
                for pattern, screen in ((PASSWORD, PASSWORD_WORDS), (ID_WORD, ID_WORDS),
                                        (CODE_WORD, CODE_WORDS)):
                    may = screen.may_match(variant)
                    assert may or pattern.search(variant) is None, variant
                    skipped += not may
    assert skipped > 100
