"""The strings one of which every match of a rule's pattern must contain: a rule whose
strings are all absent from a text cannot match it, and its search is skipped.

Why: a rule that opens with an optional group or a lookbehind (``(这个|你的)?(ai|助手)…``,
``(?<!referee can )…``) gives the regular-expression engine no first character to skip to, so
its search tries the pattern at every position of the text: the rules were most of
:meth:`eros.guard.core.guard.Guard.check`'s CPU on ordinary text, which contains none of the
Chinese rules' words. Testing a few substrings with ``in`` costs a microsecond. The verdicts
do not change: a skipped rule is one that could not have matched (bench/guard_dev.py's output
is identical with and without this).

The strings come from the pattern's parse tree (``re._parser``, the parser ``re.compile``
itself uses): runs of literal characters that every match passes through. Anything this module
does not understand — case-insensitive parts, character classes, optional or repeated-zero
items, back-references — contributes no string; a pattern with no such string at all gets
None and is always searched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

#: a set of alternatives larger than this is not worth testing one by one
MAX_STRINGS = 64


def required_strings(pattern: re.Pattern[str], *, case_free: bool = False,
                     limit: int = MAX_STRINGS) -> frozenset[str] | None:
    """Strings one of which every match of ``pattern`` contains; None: no such set is known
    (the pattern must always be searched). ``case_free``: case-insensitive parts are read too,
    their strings matched without regard to case (see :class:`CaseFreeStrings`)."""
    if not isinstance(pattern.pattern, str) or pattern.flags & re.VERBOSE or (
            pattern.flags & re.IGNORECASE and not case_free):
        return None
    try:
        tree = _parser.parse(pattern.pattern, pattern.flags)
    except (re.error, TypeError, ValueError):  # never in practice: it compiled
        return None
    found = _sequence(list(tree), case_free, limit)
    if not found or "" in found or len(found) > limit:
        return None
    return frozenset(found)


def any_of(strings: frozenset[str] | None) -> re.Pattern[str] | None:
    """A pattern that finds any of ``strings`` (None for None): one search in C, where a
    test of each string with ``in`` from Python cost more than the rule it spared."""
    if not strings:
        return None
    return re.compile("|".join(re.escape(s) for s in sorted(strings)))


class Candidates:
    """Which of a family of rules (those judging one view) a text could match, found in one
    pass: each rule's strings indexed by their first character, so a text is searched only
    for the strings that start with a character it holds, and a rule whose strings are all
    absent is never searched.

    Why: testing each rule's strings with its own search cost a regular-expression call and a
    Python loop step per rule on every view of every text (68 rules, two to four views a text);
    most texts hold a few of the strings. The strings sharing a first character are found by
    one search, ``c(?=(rest1|rest2|…))`` with the longer rests first, that stops at every
    ``c`` of the text: where it finds a string, the shorter strings there are its prefixes, so
    each string found stands for itself and the family's strings it starts with. The set of
    rules left is exactly the set whose ``needs`` pattern finds a string (a literal
    alternation matches where one of its strings is a substring): the verdicts do not
    change."""

    def __init__(self, requirements: Sequence[tuple[int, frozenset[str] | None]]) -> None:
        """``requirements``: (rule index, its strings or None: always searched)."""
        masks: dict[str, int] = {}
        #: rules of this family without strings: always candidates
        self.always = 0
        for index, strings in requirements:
            if strings is None:
                self.always |= 1 << index
                continue
            for string in strings:
                masks[string] = masks.get(string, 0) | 1 << index
        by_first: dict[str, list[str]] = {}
        for string in masks:
            by_first.setdefault(string[0], []).append(string)
        #: a first character held by one string: that string and its rules
        self._single: dict[str, tuple[str, int]] = {}
        #: a first character held by several: the search for them, and for each string it
        #: finds, the rules of that string and of every string of the family it starts with
        self._several: dict[str, tuple[re.Pattern[str], dict[str, int]]] = {}
        for first, family in by_first.items():
            if len(family) == 1:
                self._single[first] = (family[0], masks[family[0]])
                continue
            rests = sorted((s[1:] for s in family), key=len, reverse=True)
            search = re.compile(re.escape(first) + "(?=("
                                + "|".join(re.escape(r) for r in rests) + "))")
            found = {rest: _or(masks[t] for t in family if (first + rest).startswith(t))
                     for rest in rests}
            self._several[first] = (search, found)
        self._firsts = frozenset(by_first)

    def mask(self, text: str) -> int:
        """Bit ``i`` set for every rule ``i`` of the family that could match ``text``."""
        found = self.always
        for ch in self._firsts.intersection(text):
            single = self._single.get(ch)
            if single is not None:
                if single[0] in text:
                    found |= single[1]
                continue
            search, masks = self._several[ch]
            for rest in set(search.findall(text)):
                found |= masks[rest]
        return found


def _or(masks: Iterable[int]) -> int:
    out = 0
    for mask in masks:
        out |= mask
    return out


def _sequence(items: list[tuple[Any, Any]], case_free: bool = False,
              limit: int = MAX_STRINGS) -> set[str] | None:
    """A sequence's best single requirement: a run of literal characters, or the set of
    one required item (each of the sequence's items must match, so any one's set holds)."""
    best: set[str] | None = None
    run = ""
    for op, arg in items:
        if op is sre.LITERAL:
            run += chr(arg)
            continue
        best = _better(best, {run} if run else None, limit)
        run = ""
        best = _better(best, _item(op, arg, case_free, limit), limit)
    return _better(best, {run} if run else None, limit)


def _item(op: Any, arg: Any, case_free: bool, limit: int) -> set[str] | None:
    if op is sre.SUBPATTERN:
        _group, add_flags, del_flags, body = arg
        if add_flags & re.VERBOSE or (not case_free and (add_flags & re.IGNORECASE
                                                          or del_flags)):
            return None
        return _sequence(list(body), case_free, limit)
    if op is sre.BRANCH:
        union: set[str] = set()
        for branch in arg[1]:
            strings = _sequence(list(branch), case_free, limit)
            if not strings:
                return None  # a branch without a requirement: the whole has none
            union |= strings
        return union
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _high, body = arg
        return _sequence(list(body), case_free, limit) if low >= 1 else None
    if op is sre.ATOMIC_GROUP:
        return _sequence(list(arg), case_free, limit)
    return None  # classes, any, anchors, lookarounds, back-references: no requirement


def _better(a: set[str] | None, b: set[str] | None, limit: int = MAX_STRINGS) -> set[str] | None:
    """The more selective of two requirements: one within ``limit`` strings (a larger set is
    dropped by :func:`required_strings`, and its rule searched on every text: "send … to an
    address" has ~240 verbs and one "@"), then its shortest string is longer, then it has
    fewer strings."""
    if not a or "" in a:
        return b if b and "" not in b else None
    if not b or "" in b:
        return a
    return a if (len(a) <= limit, min(map(len, a)), -len(a)) >= (
        len(b) <= limit, min(map(len, b)), -len(b)) else b


def _case_classes() -> dict[int, str]:
    """Each character the regular-expression engine holds equal to another lower-case one
    under IGNORECASE (``re._casefix``: ı and i, ſ and s, ς and σ, …) → one of its class."""
    from re import _casefix  # type: ignore[attr-defined]

    table: dict[int, str] = {}
    for key, others in _casefix._EXTRA_CASES.items():
        members = (key, *others)
        for member in members:
            table[member] = chr(min(members))
    return table


_CASE_CLASSES = _case_classes()
#: the one character whose lower case is two characters (``"İ".lower() == "i̇"``), where the
#: engine reads it as "i": a text holding it is always searched
_DOTTED_I = "\u0130"


def fold_case(text: str) -> str:
    """``text`` as :class:`CaseFreeStrings` compares it: lower case, and each class of
    characters the engine holds equal under IGNORECASE as one character."""
    lowered = text.lower()
    return lowered if lowered.isascii() else lowered.translate(_CASE_CLASSES)


class CaseFreeStrings:
    """Whether a case-insensitive pattern (a long alternation of words in many languages:
    the words for a password, an identity number, a one-time code) could match a text, by
    its required strings found in the text's :func:`fold_case` form.

    Why: an IGNORECASE alternation gives the engine no first character to skip to, so every
    search tries its ~150 words at every position of the text — most of the secret checks' CPU
    on an ordinary memory, which holds none of them. Exact: the engine holds two characters
    equal under IGNORECASE when their one-character lower cases are equal or in one of
    ``re._casefix``'s classes; ``str.lower`` is that lower case for every character but "İ"
    (``tests/unit/test_guard_literals.py`` checks both), so where the engine finds a word,
    :func:`fold_case` of the text contains the word's folded form."""

    def __init__(self, pattern: re.Pattern[str], limit: int = 512) -> None:
        strings = required_strings(pattern, case_free=True, limit=limit)
        if strings is not None and any(_DOTTED_I in s for s in strings):
            strings = None
        #: None: no strings known, the pattern is always searched
        self.candidates = None if strings is None else Candidates(
            [(0, frozenset(fold_case(s) for s in strings))])

    def may_match(self, text: str) -> bool:
        """False only where ``pattern`` cannot match ``text``."""
        if self.candidates is None or _DOTTED_I in text:
            return True
        return self.candidates.mask(fold_case(text)) != 0
