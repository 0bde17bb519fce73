"""What the words of a query, a turn and a memory say, for fusion (pure): which turns a memory
cites, whether a turn says the query in the user's own words (the turns then lead under
``standing``), and whether a memory only restates turns the turn search passed over (it is then
left out: a piece of a turn, not a fact written about it). Kept apart from
:mod:`eros.recall.core.fusion`, which ranks by them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eros.recall.core.lexical import terms
from eros.recall.core.ranking import Scored


def cited(memory: Scored) -> frozenset[int]:
    """The turns a memory *cites*: its sources, unless they are the fallback window (a
    memory whose citation was invalid came from somewhere in it — it does not stand for any
    one of its turns)."""
    c = memory.candidate
    if c.sources is None or c.source_fallback:
        return frozenset()
    return frozenset(c.sources)


#: the share of the query's distinct words a turn says to have said the query in its own words
SAID_SHARE = 0.5


def said_in_words(query_text: str | None, turns: Sequence[str], min_terms: int) -> bool:
    """Whether one of ``turns`` says the query in the user's own words: at least
    ``min_terms`` of the query's distinct words (:func:`terms`) and at least
    :data:`SAID_SHARE` of them. Then the user's turn answers the question as it was asked,
    and under ``standing`` the turns lead (``lexical_lead``); a question asked around what was
    said — an implicit confidence, a fact a memory inferred — shares few words with any turn
    and keeps the calibration as it is."""
    asked = set(terms(query_text or ""))
    if not asked:
        return False
    need = max(min_terms, SAID_SHARE * len(asked))
    return any(len(asked & set(terms(t))) >= need for t in turns)


def restates_unfound(memory: Scored, found: frozenset[int],
                     texts: Mapping[int, str]) -> bool:
    """Whether ``memory`` only restates turns the turn search passed over: it cites turns,
    none of them is ``found`` (the turn pool), their text is known (``texts``: seq -> text)
    and every word of the memory (:func:`terms`) is a word of those turns — a verbatim
    fragment of a turn, not a fact written about it."""
    sources = cited(memory)
    if not sources or sources & found or not sources <= texts.keys():
        return False
    words = {_stem(w) for w in terms(memory.candidate.content)}
    said: set[str] = set()
    for seq in sources:
        said.update(_stem(w) for w in terms(texts[seq]))
    return bool(words) and words <= said


def _stem(word: str) -> str:
    """A word without a plural or third-person ``s`` (``feels`` is ``feel``)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") \
        else word
