"""Exact scoring by provenance, and what a prompt pays for (pure; docs/eval.md).

Where a suite knows the turns that hold a question's evidence (LoCoMo's ``dia_id``s,
LongMemEval's ``has_answer`` turns), no judge is needed: a recalled memory **covers** an
evidence turn iff that turn is among its sources (``companion_memories.source_seqs``), and a
raw turn covers itself. A question is answered by a cut of a system's ranked list when the
items in the cut cover *every* evidence turn (multi-hop questions have several).

A system's answer is a list of :class:`Item` s, each with a **level**: the smallest cut that
includes it. For a global ranking (``decay``, ``composite``, the baseline) the level is the
1-based position; for ``grouped`` (K per category) it is the item's rank within its category,
and a recall@K cut takes ``K // 5`` per category (dreaming-lite's original 2 per category is K=10).
From the smallest covering level follow both figures:

- **recall@K** — the covering level is within K's cut;
- **recall within B tokens** — the items of the covering cut, rendered one bullet each, fit
  in B tokens (memories are short and turns are long: this is what a prompt pays for).

Tokens are estimated (:func:`eros.core.text.estimate_tokens`): a CJK character is one token, other
text
about four characters a token — the same rule for every system, so the comparison is fair.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: the recall@K cuts and the token budgets every run reports
KS: tuple[int, ...] = (5, 10, 25)
BUDGETS: tuple[int, ...] = (500, 1000, 2000)
#: categories a ``grouped`` cut takes K // GROUPS from (eros.core.categories has five)
GROUPS = 5


@dataclass(frozen=True)
class Item:
    """One returned memory or turn: the turn ids it covers, its rendered tokens, its level."""

    sources: frozenset[str]
    tokens: int
    level: int


def global_items(sources: Sequence[Iterable[str]], tokens: Sequence[int]) -> list[Item]:
    """A ranked list: each item's level is its position (1-based)."""
    return [Item(frozenset(s), t, i + 1)
            for i, (s, t) in enumerate(zip(sources, tokens, strict=True))]


def grouped_items(sources: Sequence[Iterable[str]], tokens: Sequence[int],
                  categories: Sequence[str]) -> list[Item]:
    """A per-category answer: each item's level is its rank within its category."""
    seen: dict[str, int] = {}
    out = []
    for s, t, c in zip(sources, tokens, categories, strict=True):
        seen[c] = seen.get(c, 0) + 1
        out.append(Item(frozenset(s), t, seen[c]))
    return out


def level_for_k(k: int, *, grouped: bool) -> int:
    """The cut that recall@K takes: K items, or K // 5 per category for ``grouped``."""
    return max(1, k // GROUPS) if grouped else k


def covering_level(evidence: Iterable[str], items: Sequence[Item]) -> int | None:
    """The smallest level whose cut covers every evidence turn, or None (never covered)."""
    missing = set(evidence)
    if not missing:
        return None
    for level in sorted({i.level for i in items}):
        for item in items:
            if item.level == level:
                missing -= item.sources
        if not missing:
            return level
    return None


def tokens_at(items: Sequence[Item], level: int) -> int:
    """Rendered tokens of the cut at ``level``."""
    return sum(i.tokens for i in items if i.level <= level)


@dataclass(frozen=True)
class Coverage:
    """One question, one system: hit per K of :data:`KS` and per budget of :data:`BUDGETS`."""

    at_k: tuple[bool, ...]
    within: tuple[bool, ...]


def coverage(evidence: Sequence[str], items: Sequence[Item], *, grouped: bool,
             ks: Sequence[int] = KS, budgets: Sequence[int] = BUDGETS) -> Coverage:
    """Exact recall of one answer at every K and within every token budget."""
    level = covering_level(evidence, items)
    if level is None:
        return Coverage(tuple(False for _ in ks), tuple(False for _ in budgets))
    cost = tokens_at(items, level)
    return Coverage(tuple(level <= level_for_k(k, grouped=grouped) for k in ks),
                    tuple(cost <= b for b in budgets))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-quantile (0–1) by nearest rank, or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]
