"""The recall formulas and selections, on plain candidate rows (no database)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eros.recall.core.ranking import (
    Candidate,
    RankParams,
    age_days,
    composite_score,
    decay_score,
    pool_is_exact,
    rank,
    rank_composite,
    rank_decay,
    rank_grouped,
    recency,
    similarity,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
P = RankParams(now=NOW, decay_lambda=0.2, decay_tau_days=21, composite_tau_days=90,
               default_importance=0.5)


def cand(id: str, sim: float, *, category: str = "fact", age: float = 0.0,
         importance: float | None = 0.5, layer: str = "profile") -> Candidate:
    return Candidate(id=id, content=f"memory {id}", category=category, importance=importance,
                     created_at=NOW - timedelta(days=age),
                     layer="profile" if layer == "profile" else "relationship",
                     distance=1.0 - sim)


def ids(scored: list) -> list[str]:  # type: ignore[type-arg]
    return [s.candidate.id for s in scored]


# --- formulas ---------------------------------------------------------------------------
def test_similarity_is_one_minus_cosine_distance() -> None:
    assert similarity(0.0) == 1.0
    assert similarity(1.0) == 0.0
    assert similarity(2.0) == -1.0
    assert similarity(0.25) == pytest.approx(0.75)


def test_recency_is_exp_minus_age_over_tau() -> None:
    assert recency(0, 21) == 1.0
    assert recency(21, 21) == pytest.approx(1 / math.e)
    assert recency(42, 21) == pytest.approx(math.exp(-2))
    assert recency(-5, 21) == 1.0  # a clock skew is not a bonus beyond λ
    with pytest.raises(ValueError):
        recency(1, 0)


def test_age_in_days_never_negative() -> None:
    assert age_days(NOW - timedelta(days=3, hours=12), NOW) == pytest.approx(3.5)
    assert age_days(NOW + timedelta(days=1), NOW) == 0.0


def test_decay_score() -> None:
    assert decay_score(0.8, 0, lam=0.2, tau_days=21) == pytest.approx(1.0)
    assert decay_score(0.8, 21, lam=0.2, tau_days=21) == pytest.approx(0.8 + 0.2 / math.e)
    assert decay_score(0.8, 10_000, lam=0.2, tau_days=21) == pytest.approx(0.8)


def test_composite_score_and_default_importance() -> None:
    # sim + w · recency · importance, w = 0.1 by default
    assert composite_score(0.8, 0, 0.9, tau_days=90, default_importance=0.5) == \
        pytest.approx(0.89)
    assert composite_score(0.8, 90, 1.0, tau_days=90, default_importance=0.5) == \
        pytest.approx(0.8 + 0.1 / math.e)
    assert composite_score(0.8, 0, None, tau_days=90, default_importance=0.3) == \
        pytest.approx(0.83)
    assert composite_score(0.8, 0, 0.0, tau_days=90, default_importance=0.5) == 0.8
    assert composite_score(0.8, 0, 1.0, tau_days=90, default_importance=0.5, weight=0.3) == \
        pytest.approx(1.1)


def test_composite_never_buries_a_clearly_more_similar_old_memory() -> None:
    # issue 24: multiplying by recency made a year-old relevant memory (0.85) lose to an
    # unrelated fresh important one (0.70); the bonus is at most w, so it cannot
    relevant_old = cand("old", 0.85, importance=0.5, age=365)
    unrelated_new = cand("new", 0.70, importance=1.0, age=0)
    assert ids(rank_composite([unrelated_new, relevant_old], 1, P)) == ["old"]


# --- the named scenarios ----------------------------------------------------------------
def test_shanghai_last_year_versus_tokyo_last_week() -> None:
    shanghai = cand("shanghai", 0.82, age=365)
    tokyo = cand("tokyo", 0.78, age=7)
    # cosine alone (the reference) prefers the slightly more similar, stale fact
    assert ids(rank_grouped([tokyo, shanghai], 2)) == ["shanghai", "tokyo"]
    # the recency bonus (≤ λ) flips a near tie
    assert ids(rank_decay([shanghai, tokyo], 2, P)) == ["tokyo", "shanghai"]
    assert ids(rank_composite([shanghai, tokyo], 2, P)) == ["tokyo", "shanghai"]


def test_decay_does_not_rescue_an_irrelevant_new_memory() -> None:
    relevant_old = cand("old", 0.80, age=400)
    irrelevant_new = cand("new", 0.40, age=0)
    assert ids(rank_decay([irrelevant_new, relevant_old], 1, P)) == ["old"]


def test_mother_wants_her_to_marry_versus_likes_mocha() -> None:
    mother = cand("mother", 0.70, category="relation", importance=0.9, age=10)
    mocha = cand("mocha", 0.75, category="preference", importance=0.2, age=10)
    assert ids(rank_composite([mocha, mother], 1, P)) == ["mother"]
    assert ids(rank_composite([mocha, mother], 2, P)) == ["mother", "mocha"]
    assert ids(rank_decay([mother, mocha], 2, P)) == ["mocha", "mother"]  # same age: cosine
    # grouped: both kept, preference's section before relation's (vocabulary order)
    assert ids(rank_grouped([mother, mocha], 2)) == ["mocha", "mother"]


def test_missing_importance_counts_as_the_default() -> None:
    unknown = cand("unknown", 0.8, importance=None)
    minor = cand("minor", 0.8, importance=0.4)
    major = cand("major", 0.8, importance=0.6)
    assert ids(rank_composite([minor, unknown, major], 3, P)) == ["major", "unknown", "minor"]
    low_default = RankParams(now=NOW, default_importance=0.1)
    assert ids(rank_composite([minor, unknown], 2, low_default)) == ["minor", "unknown"]


# --- selections -------------------------------------------------------------------------
def test_grouped_takes_k_per_category_in_vocabulary_order() -> None:
    rows = [cand("f1", 0.9), cand("f2", 0.8), cand("f3", 0.7),
            cand("e1", 0.95, category="emotion"),
            cand("p1", 0.5, category="preference"), cand("p2", 0.6, category="preference"),
            cand("r1", 0.1, category="relation"), cand("r2", 0.3, category="relation"),
            cand("r3", 0.2, category="relation")]
    assert ids(rank_grouped(rows, 2)) == ["f1", "f2", "p2", "p1", "e1", "r2", "r3"]
    assert ids(rank_grouped(rows, 1)) == ["f1", "p2", "e1", "r2"]


def test_grouped_keeps_categories_with_fewer_than_k_rows_whole() -> None:
    rows = [cand("e1", 0.4, category="event"), cand("f1", 0.9)]
    assert ids(rank_grouped(rows, 2)) == ["f1", "e1"]


def test_grouped_puts_unknown_categories_last() -> None:
    rows = [cand("x", 0.99, category="zzz"), cand("f", 0.1)]
    assert ids(rank_grouped(rows, 2)) == ["f", "x"]


def test_global_top_k_ignores_category_quotas() -> None:
    rows = [cand(f"f{i}", 0.9 - i / 100) for i in range(5)] + [
        cand("e", 0.5, category="emotion")]
    assert ids(rank_decay(rows, 3, P)) == ["f0", "f1", "f2"]
    assert ids(rank_composite(rows, 3, P)) == ["f0", "f1", "f2"]


def test_ties_break_by_similarity_then_newer_then_id() -> None:
    a = cand("a", 0.5, age=1)
    b = cand("b", 0.5, age=0)
    c = cand("c", 0.5, age=0)
    assert ids(rank_grouped([a, c, b], 3)) == ["b", "c", "a"]


def test_a_row_seen_twice_counts_once() -> None:
    row = cand("a", 0.5)
    assert ids(rank_decay([row, row, cand("b", 0.4)], 3, P)) == ["a", "b"]


def test_rank_dispatch_and_unknown_strategy() -> None:
    rows = [cand("a", 0.5), cand("b", 0.4, category="event")]
    assert ids(rank("grouped", rows, k=1, per_category_k=2, params=P)) == ["a", "b"]
    assert ids(rank("decay", rows, k=1, per_category_k=2, params=P)) == ["a"]
    with pytest.raises(ValueError, match="unknown recall strategy"):
        rank("cosine", rows, k=1, per_category_k=2, params=P)  # type: ignore[arg-type]


def test_scores_are_reported() -> None:
    [s] = rank_decay([cand("a", 0.6, age=21)], 1, P)
    assert s.similarity == pytest.approx(0.6)
    assert s.score == pytest.approx(0.6 + 0.2 / math.e)


# --- exactness of a pool ----------------------------------------------------------------
def test_pool_is_exact_when_nothing_outside_could_win() -> None:
    pool = [cand("a", 0.9, age=0), cand("b", 0.5, age=0)]
    chosen = rank_decay(pool, 1, P)  # a: 1.1; outside at most 0.5 + 0.2
    assert pool_is_exact("decay", pool, chosen, 1, pool_complete=False, params=P)
    chosen2 = rank_decay(pool, 2, P)  # b: 0.7; an outsider could at best tie it (0.5 + 0.2)
    assert pool_is_exact("decay", pool, chosen2, 2, pool_complete=False, params=P)
    close = [cand("a", 0.6, age=400), cand("b", 0.55, age=400)]
    chosen3 = rank_decay(close, 1, P)  # 0.6 vs an outsider's 0.55 + 0.2
    assert not pool_is_exact("decay", close, chosen3, 1, pool_complete=False, params=P)
    assert pool_is_exact("decay", close, chosen3, 1, pool_complete=True, params=P)


def test_composite_pool_bound_is_the_floor_similarity() -> None:
    pool = [cand("a", 0.9, importance=1.0), cand("b", 0.3, importance=0.1)]
    chosen = rank_composite(pool, 1, P)  # 1.0 ≥ 0.3 + w
    assert pool_is_exact("composite", pool, chosen, 1, pool_complete=False, params=P)
    weak = [cand("a", 0.45, importance=0.2, age=400), cand("b", 0.4, importance=0.1)]
    chosen = rank_composite(weak, 1, P)  # ~0.451 < 0.4 + w: a fresh important outsider could win
    assert not pool_is_exact("composite", weak, chosen, 1, pool_complete=False, params=P)


def test_short_answer_from_an_incomplete_pool_is_not_exact() -> None:
    pool = [cand("a", 0.9)]
    assert not pool_is_exact("decay", pool, rank_decay(pool, 2, P), 2, pool_complete=False,
                             params=P)


# --- properties -------------------------------------------------------------------------
_rows = st.lists(st.tuples(st.floats(-1, 1), st.sampled_from(["fact", "event", "emotion"]),
                           st.floats(0, 1000), st.one_of(st.none(), st.floats(0, 1))),
                 max_size=40)


@given(_rows, st.integers(1, 4))
def test_grouped_is_the_per_category_top_k(rows: list, k: int) -> None:  # type: ignore[type-arg]
    cands = [cand(f"{i:03}", s, category=c, age=a, importance=imp)
             for i, (s, c, a, imp) in enumerate(rows)]
    out = rank_grouped(cands, k)
    for category in {c.category for c in cands}:
        mine = [s for s in out if s.candidate.category == category]
        rest = [c for c in cands if c.category == category
                and c.id not in {s.candidate.id for s in mine}]
        assert len(mine) == min(k, sum(c.category == category for c in cands))
        assert all(s.similarity >= similarity(r.distance) for s in mine for r in rest)


@given(_rows, st.integers(1, 10))
def test_decay_top_k_matches_brute_force(rows: list, k: int) -> None:  # type: ignore[type-arg]
    cands = [cand(f"{i:03}", s, category=c, age=a, importance=imp)
             for i, (s, c, a, imp) in enumerate(rows)]
    out = rank_decay(cands, k, P)
    scores = sorted((decay_score(similarity(c.distance), age_days(c.created_at, NOW),
                                 lam=0.2, tau_days=21) for c in cands), reverse=True)
    assert [s.score for s in out] == pytest.approx(scores[:k])
