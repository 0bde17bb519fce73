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
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

#: a set of alternatives larger than this is not worth testing one by one
MAX_STRINGS = 64


def required_strings(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Strings one of which every match of ``pattern`` contains; None: no such set is known
    (the pattern must always be searched)."""
    if pattern.flags & (re.IGNORECASE | re.VERBOSE) or not isinstance(pattern.pattern, str):
        return None
    try:
        tree = _parser.parse(pattern.pattern, pattern.flags)
    except (re.error, TypeError, ValueError):  # never in practice: it compiled
        return None
    found = _sequence(list(tree))
    if not found or "" in found or len(found) > MAX_STRINGS:
        return None
    return frozenset(found)


def any_of(strings: frozenset[str] | None) -> re.Pattern[str] | None:
    """A pattern that finds any of ``strings`` (None for None): one search in C, where a
    test of each string with ``in`` from Python cost more than the rule it spared."""
    if not strings:
        return None
    return re.compile("|".join(re.escape(s) for s in sorted(strings)))


def _sequence(items: list[tuple[Any, Any]]) -> set[str] | None:
    """A sequence's best single requirement: a run of literal characters, or the set of
    one required item (each of the sequence's items must match, so any one's set holds)."""
    best: set[str] | None = None
    run = ""
    for op, arg in items:
        if op is sre.LITERAL:
            run += chr(arg)
            continue
        best = _better(best, {run} if run else None)
        run = ""
        best = _better(best, _item(op, arg))
    return _better(best, {run} if run else None)


def _item(op: Any, arg: Any) -> set[str] | None:
    if op is sre.SUBPATTERN:
        _group, add_flags, del_flags, body = arg
        if add_flags & (re.IGNORECASE | re.VERBOSE) or del_flags:
            return None
        return _sequence(list(body))
    if op is sre.BRANCH:
        union: set[str] = set()
        for branch in arg[1]:
            strings = _sequence(list(branch))
            if not strings:
                return None  # a branch without a requirement: the whole has none
            union |= strings
        return union
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _high, body = arg
        return _sequence(list(body)) if low >= 1 else None
    if op is sre.ATOMIC_GROUP:
        return _sequence(list(arg))
    return None  # classes, any, anchors, lookarounds, back-references: no requirement


def _better(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    """The more selective of two requirements: its shortest string is longer, then it has
    fewer strings."""
    if not a or "" in a:
        return b if b and "" not in b else None
    if not b or "" in b:
        return a
    return a if (min(map(len, a)), -len(a)) >= (min(map(len, b)), -len(b)) else b
