"""Recall ranking, pure: candidate rows in, ordered selections out.

The database only finds candidates (the nearest memories by cosine, see
``eros.recall.db.recall_sql``);
every ranking decision is made here, on plain rows, so each formula is unit-tested without a
database and the SQL never has to repeat it.

Formulas (MISSION.md's roadmap), with ``sim = 1 − cosine distance`` and ``age`` in days:

- ``grouped``   — the original dreaming-lite recall: per category, the ``k`` most similar;
  categories in the fixed vocabulary order, then rank. Score is the similarity.
- ``decay``     — ``sim + λ · exp(−age / τ)``: an additive recency bonus of at most ``λ``, so a
  fresh memory beats an old one only when they are about equally relevant.
- ``composite`` — ``sim + w · exp(−age / τ) · importance`` (missing importance → a configured
  default), one global top-``k`` across categories instead of fixed quotas. It used to
  *multiply* similarity by recency and importance; on LoCoMo's months of conversation that made
  a year-old relevant memory worth a few percent of any recent one, and composite recalled a
  third of what grouped did. As a bounded bonus (at most ``w``, 0.1), recency and
  importance re-order near ties — "mother wants her to marry" over "likes mocha", last week's
  move over last year's city — and never bury a clearly more similar memory.

Ties are broken deterministically (similarity, then newer, then id) so the same rows always
rank the same way: a prompt that flickers between calls is a bug users notice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from eros.core.categories import CATEGORIES

Strategy = Literal["grouped", "decay", "composite"]
STRATEGIES: tuple[Strategy, ...] = ("grouped", "decay", "composite")
Layer = Literal["profile", "relationship"]
_DAY_SECS = 86400.0


@dataclass(frozen=True)
class Candidate:
    """One memory the database found near the query, before any ranking."""

    id: str
    content: str
    category: str
    importance: float | None
    created_at: datetime
    layer: Layer
    #: pgvector's cosine distance ``embedding <=> query``, in [0, 2].
    distance: float
    #: special category (core/sensitivity.py); None = none.
    sensitivity: str | None = None
    #: provenance, read with the row (``source_seqs``/``source_fallback``); None = not
    #: recorded or not read.
    sources: tuple[int, ...] | None = None
    source_fallback: bool = False


@dataclass(frozen=True)
class Scored:
    """A candidate with the two numbers a ranking produced for it."""

    candidate: Candidate
    similarity: float
    score: float


@dataclass(frozen=True)
class RankParams:
    """The tunable weights; they come from configuration because only traffic can tune them."""

    now: datetime
    decay_lambda: float = 0.2
    decay_tau_days: float = 21.0
    composite_tau_days: float = 90.0
    default_importance: float = 0.5
    composite_weight: float = 0.1


def similarity(distance: float) -> float:
    """Cosine similarity from pgvector's cosine distance (``<=>`` is ``1 − cos``)."""
    return 1.0 - distance


def age_days(created_at: datetime, now: datetime) -> float:
    """Age in days, never negative: a clock skew must not turn into a bonus above ``λ``."""
    return max(0.0, (now - created_at).total_seconds() / _DAY_SECS)


def recency(age: float, tau_days: float) -> float:
    """``exp(−age / τ)``: 1 for a memory written now, ``1/e`` after τ days."""
    if tau_days <= 0:
        raise ValueError(f"tau_days must be > 0, got {tau_days}")
    return math.exp(-max(0.0, age) / tau_days)


def decay_score(sim: float, age: float, *, lam: float, tau_days: float) -> float:
    """``sim + λ · exp(−age / τ)``."""
    return sim + lam * recency(age, tau_days)


def composite_score(sim: float, age: float, importance: float | None, *, tau_days: float,
                    default_importance: float, weight: float = 0.1) -> float:
    """``sim + w · exp(−age / τ) · importance``; ``None`` importance (rows written before
    extraction emitted it) counts as ``default_importance`` so old rows are not buried."""
    value = default_importance if importance is None else importance
    return sim + weight * recency(age, tau_days) * value


def _tiebreak(item: Scored) -> tuple[float, float, float, str]:
    """Sort key: higher score, then higher similarity, then newer, then id (all descending
    except id) — expressed as an ascending key."""
    c = item.candidate
    return (-item.score, -item.similarity, -c.created_at.timestamp(), c.id)


def _unique(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The same row may come back from two queries (an HNSW pass and its exact fallback)."""
    seen: dict[str, Candidate] = {}
    for c in candidates:
        seen.setdefault(c.id, c)
    return list(seen.values())


def score_all(candidates: Iterable[Candidate], fn: Callable[[Candidate], float]) -> list[Scored]:
    return [Scored(c, similarity(c.distance), fn(c)) for c in _unique(candidates)]


def top_k(scored: Sequence[Scored], k: int) -> list[Scored]:
    """The ``k`` best by score (deterministic tie-break)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    return sorted(scored, key=_tiebreak)[:k]


def rank_grouped(candidates: Iterable[Candidate], per_category_k: int,
                 category_order: Sequence[str] = CATEGORIES) -> list[Scored]:
    """The original dreaming-lite recall: the ``per_category_k`` most similar per category,
    ordered by category (vocabulary order; unknown categories last, alphabetically) then by rank."""
    scored = score_all(candidates, lambda c: similarity(c.distance))
    by_category: dict[str, list[Scored]] = {}
    for item in scored:
        by_category.setdefault(item.candidate.category, []).append(item)
    order = [c for c in category_order if c in by_category]
    order += sorted(c for c in by_category if c not in category_order)
    out: list[Scored] = []
    for category in order:
        out.extend(top_k(by_category[category], per_category_k))
    return out


def rank_decay(candidates: Iterable[Candidate], k: int, params: RankParams) -> list[Scored]:
    """Global top-``k`` by ``sim + λ · exp(−age / τ)``."""
    return top_k(score_all(candidates, lambda c: decay_score(
        similarity(c.distance), age_days(c.created_at, params.now),
        lam=params.decay_lambda, tau_days=params.decay_tau_days)), k)


def rank_composite(candidates: Iterable[Candidate], k: int, params: RankParams) -> list[Scored]:
    """Global top-``k`` by ``sim + w · exp(−age / τ) · importance``."""
    return top_k(score_all(candidates, lambda c: composite_score(
        similarity(c.distance), age_days(c.created_at, params.now), c.importance,
        tau_days=params.composite_tau_days, default_importance=params.default_importance,
        weight=params.composite_weight)), k)


def rank(strategy: Strategy, candidates: Iterable[Candidate], *, k: int, per_category_k: int,
         params: RankParams) -> list[Scored]:
    """Dispatch on the strategy name (``k`` is the global K, ignored by ``grouped``)."""
    if strategy == "grouped":
        return rank_grouped(candidates, per_category_k)
    if strategy == "decay":
        return rank_decay(candidates, k, params)
    if strategy == "composite":
        return rank_composite(candidates, k, params)
    raise ValueError(f"unknown recall strategy {strategy!r}; expected one of {STRATEGIES}")


def pool_is_exact(strategy: Strategy, pool: Sequence[Candidate], chosen: Sequence[Scored],
                  k: int, *, pool_complete: bool, params: RankParams) -> bool:
    """Whether a top-``k`` taken from a cosine pool is provably the top-``k`` of every row.

    A memory left outside the pool is at most as similar as the pool's least similar member
    (``floor``). Its decay score is then at most ``floor + λ`` and its composite score at most
    ``floor + w`` (recency and importance are ≤ 1), so when that bound does not beat the
    ``k``-th chosen score nothing outside could have been chosen. A complete pool (every row in
    scope) is exact trivially. ``grouped`` is never pool-based, so it is exact by construction.
    """
    if pool_complete or strategy == "grouped":
        return True
    if len(chosen) < k or not pool:
        return False
    floor = min(similarity(c.distance) for c in pool)
    bound = floor + (params.decay_lambda if strategy == "decay" else params.composite_weight)
    return bound <= chosen[-1].score
