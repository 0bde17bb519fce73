"""What a recall query asks for, pure (``fused``; docs/recall.md, "Fused"): a question about
the past, or a remark.

Recall runs on the user's latest message, and that is most often a *remark* — "the hospital
called at 3am", "my manager asked why I keep taking long lunches" — not a question. A remark
asks what the companion *knows* about the user (the memory a confidence months ago left: its
facts are the keys meaning links a remark to); a question about the past ("when did Caroline
go to the support group?") asks what was *said*, and the user's own turns hold more of that
than any memory. :func:`is_question` tells them apart by a question mark in any script or an
interrogative opening; for a remark that no turn says in the user's own words, ``fused`` lets a
small memory pool follow the ranking's first RECALL_FUSION_REMARK_TAIL_AFTER items (the memory
tail of :mod:`eros.recall.core.fusion_budget`, which otherwise starts after 25): the head stays
as ranked, so a turn that clearly stands out still comes first. With
RECALL_FUSION_REMARK_LEAD_TURNS only the *turns* that open the list keep their places (the
tail starts at the list's first memory): a turn ranked below a memory does not stand out
above what is known, and its tokens come before the rest of a small pool that a small budget
would otherwise hold whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from eros.recall.core.fusion_words import said_in_words

P = TypeVar("P", bound=Any)

#: question marks: Latin/Greek (U+037E), Spanish opening, Arabic, Armenian, Ethiopic,
#: full-width (CJK), small and reversed forms
QUESTION_MARKS = frozenset("?\u00bf\u037e\u061f\u055e\u1367\uff1f\ufe56\u2e2e")
#: words that open a question and rarely a statement (lower case; "when", "how", "como",
#: "wie", "did" open remarks too — "when I got home…", "como siempre…" — and are left out)
INTERROGATIVE_OPENINGS = frozenset((
    "what", "who", "whom", "whose", "why", "which",
    "qué", "cuándo", "dónde", "adónde", "quién", "quiénes", "cuál", "cuáles", "cómo", "cuánto",
    "cuánta", "cuántos", "cuántas",
    "warum", "wieso", "weshalb", "wer", "wen", "wem", "wessen", "wann", "welche", "welcher",
    "welches", "welchen", "woher", "wohin",
    "pourquoi", "quoi", "quel", "quelle", "quels", "quelles", "est-ce", "combien",
    "quem", "qual", "quais", "onde",
    "perché", "cosa", "chi", "quale", "quali", "dove",
))
#: CJK interrogatives anywhere (a question without its mark: 你喜欢什么, 他去哪儿了)
CJK_INTERROGATIVES = ("什么", "什麼", "哪", "谁", "誰", "怎么", "怎麼", "为什么", "為什麼",
                      "多少")
#: CJK sentence-final question particles
CJK_FINAL = ("吗", "嗎")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)?")


def is_question(text: str | None) -> bool:
    """Whether ``text`` asks a question (a question mark in any script, an interrogative
    opening, or a CJK interrogative) rather than making a remark. No text: a question (the
    caller gave no message to read an intent from; nothing changes)."""
    if not text or not text.strip():
        return True
    if any(c in QUESTION_MARKS for c in text):
        return True
    first = _WORD.search(text)
    if first is not None and first.group(0).lower() in INTERROGATIVE_OPENINGS:
        return True
    if any(w in text for w in CJK_INTERROGATIVES):
        return True
    return text.rstrip(" 。.!！").endswith(CJK_FINAL)


def for_intent(params: P, query_text: str | None, turns: Sequence[str]) -> P:
    """``params`` (FusionParams) for what the query asks: for a remark that no turn of the
    pool (``turns``, their texts) says in the user's own words (:func:`said_in_words` — such
    a turn answers it as it was put), the memory tail starts after ``remark_tail_after``
    items — at the list's first memory when ``remark_lead_turns``; a question, or an echoed
    remark, is ranked as it is."""
    if not params.remark_tail_after or is_question(query_text) \
            or said_in_words(query_text, turns, params.lexical_min_terms):
        return params
    return replace(params, memory_tail_after=params.remark_tail_after,
                   memory_tail_at_memory=params.remark_lead_turns,
                   memory_window_tokens=params.remark_memory_tokens,
                   lead_tokens=params.remark_lead_tokens)
