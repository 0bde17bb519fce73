"""The lexical signal of recall, pure: BM25 over the candidate pool, fused by reciprocal rank.

A small embedding model ranks "went to the LGBTQ support group" and "joined a running club"
close together; the words the user typed tell them apart. Recall finds its candidates by
vector (the pool, ``eros.recall.services.recall``); when RECALL_LEXICAL is on and the query's text
is known, the pool is re-ordered by reciprocal-rank fusion (RRF) of the strategy's own order
and a BM25 order over the pool:

    fused(m) = 1 / (c + rank_strategy(m)) + 1 / (c + rank_bm25(m))    (c = 60)

A candidate sharing no word with the query has no BM25 rank and keeps only its strategy term.
IDF is computed over the pool, so a word every candidate carries (the user's own name, in
LoCoMo's observations) weighs nothing. Words are Unicode word runs, case-folded; CJK text
(no spaces) is cut into overlapping character bigrams, the usual unit for Chinese and
Japanese search.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from eros.recall.core.ranking import Scored

RRF_C = 60
_BM25_K1 = 1.2
_BM25_B = 0.75
_WORD = re.compile(r"\w+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
#: short function words that carry no topic (English); IDF handles the rest
_STOP = frozenset({"a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do",
                   "does", "for", "from", "had", "has", "have", "he", "her", "his", "i", "in",
                   "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so",
                   "that", "the", "their", "them", "they", "this", "to", "was", "we", "were",
                   "what", "when", "where", "which", "who", "why", "will", "with", "you",
                   "your", "how"})


def terms(text: str) -> list[str]:
    """Search terms of ``text``: case-folded words (stop words dropped), CJK as bigrams."""
    out: list[str] = []
    folded = text.casefold()
    for run in _CJK_RUN.findall(folded):
        out += [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]
    for word in _WORD.findall(_CJK_RUN.sub(" ", folded)):
        if word not in _STOP:
            out.append(word)
    return out


def bm25(query: str, documents: Sequence[str], min_terms: int = 1) -> list[float]:
    """BM25 of each document for ``query``, IDF over ``documents`` themselves; a document
    saying fewer than ``min_terms`` of the query's distinct terms (all of them, when the query
    has fewer) scores 0 — it has no lexical rank."""
    q = set(terms(query))
    if not q or not documents:
        return [0.0] * len(documents)
    bags = [Counter(terms(d)) for d in documents]
    need = min(min_terms, len(q))
    n = len(bags)
    avg = sum(sum(b.values()) for b in bags) / n or 1.0
    df = {t: sum(1 for b in bags if t in b) for t in q}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in q if df[t]}
    scores = []
    for bag in bags:
        if sum(1 for t in q if t in bag) < need:
            scores.append(0.0)
            continue
        length = sum(bag.values())
        score = 0.0
        for t, w in idf.items():
            tf = bag.get(t, 0)
            if tf:
                score += w * tf * (_BM25_K1 + 1) / (
                    tf + _BM25_K1 * (1 - _BM25_B + _BM25_B * length / avg))
        scores.append(score)
    return scores


def fuse(order: Sequence[int], lexical: Sequence[float], c: int = RRF_C, *,
         tied: bool = False) -> list[int]:
    """Reciprocal-rank fusion: ``order`` (indices, best first) and the lexical scores of the
    same indices (0 = no shared word: no lexical rank). Returns the fused order (stable: ties
    keep the strategy's order). ``tied``: the documents without a lexical score share the
    lexical ranking's remaining places (their mid-rank) instead of having none."""
    by_lex = sorted((i for i in order if lexical[i] > 0), key=lambda i: -lexical[i])
    lex_rank = {i: r for r, i in enumerate(by_lex, start=1)}
    rest = 1 / (c + (len(by_lex) + 1 + len(order)) / 2) if tied else 0.0
    fused = {i: 1 / (c + r) + (1 / (c + lex_rank[i]) if i in lex_rank else rest)
             for r, i in enumerate(order, start=1)}
    return sorted(order, key=lambda i: -fused[i])


def rerank(ranked: Sequence[Scored], query: str, k: int, *, per_category: bool) -> list[Scored]:
    """``ranked`` (a strategy's order over the whole pool) fused with BM25 over the same
    pool, cut to ``k`` — per category for ``grouped`` (its sections keep their order)."""
    lexical = bm25(query, [s.candidate.content for s in ranked])
    if not per_category:
        return [ranked[i] for i in fuse(range(len(ranked)), lexical)[:k]]
    out: list[Scored] = []
    sections: dict[str, list[int]] = {}
    for i, s in enumerate(ranked):
        sections.setdefault(s.candidate.category, []).append(i)
    for members in sections.values():  # dicts keep the sections' first-seen order
        out += [ranked[i] for i in fuse(members, lexical)[:k]]
    return out
