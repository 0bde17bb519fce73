"""The newer statement about the same specific subject goes first, pure (``fused``).

A knowledge update is not always a superseded memory. "My boyfriend Tom is a chef" and, weeks
later, "I broke up with Tom last weekend": offline consolidation may not connect the two, so
the memory of the first stays *current* and provenance has nothing to demote — and asked "How
are things with your boyfriend?", the first turn is the nearest thing there is. What ties the
two is their *subject*: a specific word both say (Tom) that little else near the query says.
When an older item is ranked above a newer one on such a shared subject, the newer one takes
its place and the older follows right after it: nothing is dropped, the current state is read
first.

"Specific" is measured on the ranked head itself, not on a vocabulary: a term counts when at
least two and at most a fifth of the head's items say it, is at least three characters (a CJK
bigram: two), is not a number, is not one of the query's own words (those make *every* item
about the query's subject, and the query decides nothing about which of them is newer), and
is **written as a name**: a word some item of the head writes with a capital inside a
sentence (Tom, Denver — :func:`named`), or a term of a script without case (CJK). Rarity in
the head alone was not enough: the turns of one long conversation share everyday words
("just", "really", "thanks", "last"), and moving on those cost 4.2 points of recall@10 and 9.4
of recall@5 on LoCoMo with the heuristic extractor (bench/RESULTS.md).

An embedding cannot do this: multilingual e5-small puts "I broke up with Tom" nearer "I moved
to Tokyo last month" (0.88) than to "My boyfriend Tom is a chef" (0.86).

A memory is never "newer" than the turn it was written from (it cites it): that pair is left
as the ranking put it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from eros.recall.core.lexical import terms

#: the shortest word that can name a subject (a CJK term is a character bigram: two)
MIN_TERM = 3
_CJK_START = "\u3040"
#: a ranked item; the caller says how to read its text and date and whether two cite each other
Item = TypeVar("Item")


def _specific_shape(term: str) -> bool:
    if term.isdigit():
        return False
    return len(term) >= MIN_TERM or (len(term) == 2 and term[0] >= _CJK_START)


_WORD = re.compile(r"\w+")
#: what ends a sentence or opens a quote or a list item: a capital right after one is no name
_OPENERS = frozenset(".!?…:;\"'“”‘’«»()[]{}-–—*•")


def named(texts: Sequence[str]) -> frozenset[str]:
    """The words ``texts`` write with a capital inside a sentence (Tom, Denver — not a
    sentence's first word), case-folded: the words a subject is named by."""
    out = set()
    for text in texts:
        for m in _WORD.finditer(text):
            if not m.group()[0].isupper():
                continue
            at = m.start() - 1  # the last character before the word that is not a space
            while at >= 0 and text[at].isspace():
                at -= 1
            if at >= 0 and text[at] not in _OPENERS:
                out.add(m.group().casefold())
    return frozenset(out)


def _name_like(term: str, names: frozenset[str]) -> bool:
    """A term of a script without case (a CJK bigram) or a word written as a name."""
    return term[0].lower() == term[0].upper() or term in names


def subject_terms(texts: Sequence[str], query_text: str | None) -> list[frozenset[str]]:
    """Each text's specific terms within ``texts`` (see the module's docstring)."""
    asked = set(terms(query_text or ""))
    names = named(texts)
    bags = [frozenset(t for t in terms(text) if _specific_shape(t) and t not in asked
                      and _name_like(t, names)) for text in texts]
    df = Counter(t for bag in bags for t in bag)
    most = max(2, len(texts) // 5)
    specific = {t for t, n in df.items() if 2 <= n <= most}
    return [bag & specific for bag in bags]


def newer_first(items: Sequence[Item], depth: int, query_text: str | None, *,
                text: Callable[[Item], str], dated: Callable[[Item], datetime],
                cites: Callable[[Item, Item], bool]) -> list[Item]:
    """``items`` (ranked) with, within the first ``depth``, every older item preceded by the
    newest later item sharing a specific subject term with it (0: unchanged). ``text`` and
    ``dated`` read an item; ``cites`` says whether one of two items was written from the other
    (a memory and its source turn: left as ranked)."""
    head = list(items[:depth])
    if depth <= 0 or len(head) < 2:
        return list(items)
    bags = subject_terms([text(i) for i in head], query_text)
    when = [dated(i) for i in head]
    i = 0
    while i < len(head):
        best = None
        if bags[i]:
            for j in range(i + 1, len(head)):
                if bags[j] & bags[i] and when[j] > when[i] and not cites(head[i], head[j]) \
                        and (best is None or when[j] > when[best]):
                    best = j
        if best is not None:
            head.insert(i, head.pop(best))
            bags.insert(i, bags.pop(best))
            when.insert(i, when.pop(best))
        i += 1
    return head + list(items[depth:])
