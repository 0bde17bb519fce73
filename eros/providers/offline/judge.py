"""The offline consolidation judge: a deterministic, NON-MODEL answer to a consolidation request
that only changes what it can recognise, so offline consolidation makes sense with a real
embedder (whose clusters are wide: e5 puts most short statements above 0.8 cosine).

Rules, per cluster (members are listed oldest first):

1. *Slots* — where the user lives ("lives in Shanghai", "moved to Tokyo", 住在上海, 搬到东京)
   and what they work as ("works as a nurse", 在…上班/工作). The newest statement of a slot is
   canonical; older ones naming the same value are its duplicates, older ones naming another
   value are superseded (a move, a new job). The slot with the most statements wins.
2. Otherwise, members that say the same words, or one of which says nothing the other does
   not ("Likes jazz" / "likes jazz music."; case, punctuation and filler words such as
   "really", "now", "though" aside), are duplicates of the newest of them.
3. Everything else stays separate: an unrecognised cluster is left alone, never merged.

The test fakes keep the blunter rule of :func:`eros.providers.offline.heuristic.
offline_consolidation_reply` (every cluster is duplicates of its newest member).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_CLUSTER_LINE = re.compile(r"^Cluster (\d+) \(category (\w+)\):\s*$")
_MEMBER_LINE = re.compile(r"^\[(\d+)\] [^|]*\| (\w+) \| importance ([-\d.]+) \| (.*)$")

_PLACE_EN = re.compile(
    r"(?i:\b(?:lives?|living|moved|moving|relocated|based|settled))\s+(?i:back\s+)?"
    r"(?i:in|to)\s+(?:the\s+)?([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")
_PLACE_ZH = re.compile(r"(?:住在|搬到了?|搬回了?|搬去了?|定居在?|回到了?)(?:老家)?"
                       r"([\u4e00-\u9fff]{2})")
_JOB_EN = re.compile(r"(?i:\b(?:works?|working)\s+as\s+(?:an?\s+)?)([\w' -]+?)"
                     r"(?=\s+(?:at|in|for)\b|[,.]|$)")
_JOB_ZH = re.compile(r"在([^，。,.;；\s]{2,16}?)(?:上班|工作|做)")
_FILLER = frozenset(["really", "now", "though", "actually", "still", "so", "just", "very",
                     "also", "the", "a", "an"])
_WORD = re.compile(r"[\w\u4e00-\u9fff]+")


@dataclass(frozen=True)
class _Member:
    number: int
    category: str
    importance: float | None
    content: str


def residence(text: str) -> str | None:
    """Where a statement says the user lives ("lives in Shanghai" → "shanghai"), if it does."""
    found = _PLACE_EN.search(text) or _PLACE_ZH.search(text)
    return found.group(1).lower() if found else None


def _job(text: str) -> str | None:
    found = _JOB_EN.search(text) or _JOB_ZH.search(text)
    return found.group(1).strip().lower() if found else None


SLOTS: tuple[Callable[[str], str | None], ...] = (residence, _job)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _FILLER)


def _same_words_groups(members: list[_Member]) -> list[list[_Member]]:
    """Members linked when one's words are within the other's (transitively), in order."""
    words = [_words(m.content) for m in members]
    group = list(range(len(members)))
    for i in range(len(members)):
        for j in range(i):
            if words[i] and words[j] and (words[i] <= words[j] or words[j] <= words[i]):
                old, new = group[i], group[j]
                group = [new if g == old else g for g in group]
    out: dict[int, list[_Member]] = {}
    for m, g in zip(members, group, strict=True):
        out.setdefault(g, []).append(m)
    return list(out.values())


def _answer(number: int, members: list[_Member]) -> dict[str, Any]:
    """One cluster's answer (see the module docstring for the rules)."""
    best: list[tuple[_Member, str]] = []
    for slot in SLOTS:
        valued = [(m, v) for m in members if (v := slot(m.content)) is not None]
        if len(valued) >= 2 and len(valued) > len(best):
            best = valued
    if best:
        newest, value = best[-1]
        duplicates = [m for m, v in best if v == value]
        superseded = [m for m, v in best if v != value]
    else:
        groups = [g for g in _same_words_groups(members) if len(g) >= 2]
        if not groups:
            return {"cluster": number, "separate": [m.number for m in members]}
        duplicates = max(groups, key=len)
        newest, superseded = duplicates[-1], []
    placed = {m.number for m in duplicates} | {m.number for m in superseded}
    importances = [m.importance for m in duplicates if m.importance is not None]
    return {"cluster": number,
            "canonical": {"content": newest.content, "category": newest.category,
                          "importance": max(importances) if importances else None},
            "duplicates": [m.number for m in duplicates],
            "superseded": [m.number for m in superseded],
            "separate": [m.number for m in members if m.number not in placed]}


def judged_consolidation_reply(request: str) -> str:
    """The reply JSON to a consolidation request (``eros.consolidation.core.consolidation_reply``
    format)."""
    clusters: list[tuple[int, list[_Member]]] = []
    for line in request.splitlines():
        header = _CLUSTER_LINE.match(line)
        if header:
            clusters.append((int(header.group(1)), []))
            continue
        member = _MEMBER_LINE.match(line)
        if member and clusters:
            number, category, importance, content = member.groups()
            try:
                value: float | None = float(importance)
            except ValueError:
                value = None
            clusters[-1][1].append(_Member(int(number), category, value, content))
    answers = [_answer(number, members) for number, members in clusters if members]
    return json.dumps({"clusters": answers}, ensure_ascii=False)
