"""The fused strategy's rules, pure (eros/core/fusion.py): one calibrated score for memories
and turns, provenance deciding what is returned once, stale turns demoted, the budget."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from eros.core.fusion import (
    RECALL_STRATEGIES,
    FusionParams,
    TurnCandidate,
    carry_labels,
    cited,
    fuse,
    turn_score,
    within_budget,
)
from eros.core.ranking import Candidate, Scored, similarity

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
P = FusionParams(now=NOW, turn_offset=0.03, stale_penalty=0.2, composite_weight=0.0)


def mem(id: str, sim: float, sources: tuple[int, ...] | None = None, *,
        fallback: bool = False, content: str | None = None) -> Scored:
    c = Candidate(id=id, content=content or f"memory {id}", category="fact", importance=0.5,
                  created_at=NOW - timedelta(days=30), layer="profile", distance=1 - sim,
                  sources=sources, source_fallback=fallback)
    return Scored(c, sim, sim)


def turn(seq: int, sim: float, content: str | None = None) -> TurnCandidate:
    return TurnCandidate(seq, "00000000-0000-0000-0000-000000000001",
                         NOW - timedelta(days=30), content or f"turn {seq}", 1 - sim)


def keys(items: list) -> list[str]:  # type: ignore[type-arg]
    return [i.key for i in items]


def test_fused_is_a_recall_strategy_beside_the_memory_rankings() -> None:
    assert RECALL_STRATEGIES == ("grouped", "decay", "composite", "fused")


def test_a_turn_pays_the_offset_so_at_equal_similarity_the_memory_wins() -> None:
    out = fuse([mem("a", 0.80)], [turn(1, 0.80)], k=2, params=P)
    assert keys(out) == ["m:a", "t:1"]
    assert out[1].score == pytest.approx(0.80 - 0.03)


def test_a_turn_takes_a_memorys_place_only_when_clearly_nearer() -> None:
    close = fuse([mem("a", 0.80)], [turn(1, 0.82)], k=1, params=P)
    clear = fuse([mem("a", 0.80)], [turn(1, 0.84)], k=1, params=P)
    assert keys(close) == ["m:a"]
    assert keys(clear) == ["t:1"]


def test_turns_do_not_crowd_out_memories_of_similar_relevance() -> None:
    # rank for rank as similar as the memories: the turns start below the sixth memory
    memories = [mem(f"m{i}", 0.80 - i * 0.005) for i in range(10)]
    turns = [turn(i, 0.80 - i * 0.005) for i in range(10)]
    out = fuse(memories, turns, k=10, params=P)
    assert [i.kind for i in out[:7]] == ["memory"] * 7
    assert sum(i.kind == "memory" for i in out) == 8


def test_a_turn_cited_by_a_returned_memory_is_its_quote_not_a_second_item() -> None:
    out = fuse([mem("a", 0.80, (7,))], [turn(7, 0.79), turn(8, 0.70)], k=3, params=P)
    assert keys(out) == ["m:a", "t:8"]
    assert [q.seq for q in out[0].quotes] == [7]


def test_a_memory_whose_turns_are_all_returned_above_it_adds_nothing() -> None:
    out = fuse([mem("a", 0.70, (7,)), mem("b", 0.60)], [turn(7, 0.90)], k=3, params=P)
    assert keys(out) == ["t:7", "m:b"]


def test_a_memory_citing_a_returned_turn_and_another_is_kept_and_quotes_the_other() -> None:
    out = fuse([mem("a", 0.70, (7, 9))], [turn(7, 0.90), turn(9, 0.5)], k=3, params=P)
    assert keys(out) == ["t:7", "m:a"]
    assert [q.seq for q in out[1].quotes] == [9]


def test_a_memory_lifts_the_turns_it_cites_as_quotes_even_when_not_found_near() -> None:
    lifted = [turn(42, 0.0, "what I actually said")]
    out = fuse([mem("a", 0.80, (42,))], [], k=2, params=P, lifted=lifted)
    assert keys(out) == ["m:a"]
    assert [q.content for q in out[0].quotes] == ["what I actually said"]


def test_fallback_provenance_cites_nothing() -> None:
    assert cited(mem("a", 0.8, (1, 2, 3), fallback=True)) == frozenset()
    assert cited(mem("a", 0.8, None)) == frozenset()
    out = fuse([mem("a", 0.80, (7,), fallback=True)], [turn(7, 0.79)], k=3, params=P)
    assert keys(out) == ["m:a", "t:7"]  # the window is not a citation of turn 7


def test_a_turn_cited_only_by_superseded_memories_is_demoted() -> None:
    old, new = turn(1, 0.85, "I live in Shanghai"), turn(2, 0.80, "I moved to Tokyo")
    assert keys(fuse([], [old, new], k=2, params=P)) == ["t:1", "t:2"]
    assert keys(fuse([], [old, new], k=2, params=P, stale={1})) == ["t:2", "t:1"]
    assert turn_score(old, P, stale=True) == pytest.approx(0.85 - 0.03 - 0.2)


def test_the_same_turn_found_twice_is_one_item() -> None:
    assert keys(fuse([], [turn(1, 0.8), turn(1, 0.8)], k=5, params=P)) == ["t:1"]


def test_ties_are_deterministic_memory_first_then_newer_then_key() -> None:
    a = fuse([mem("b", 0.83), mem("a", 0.83)], [turn(1, 0.86)], k=3, params=P)
    assert keys(a) == ["m:a", "m:b", "t:1"]
    assert keys(fuse([mem("a", 0.83), mem("b", 0.83)], [turn(1, 0.86)], k=3, params=P)) \
        == keys(a)


def test_recency_and_importance_count_for_turns_as_for_memories() -> None:
    p = FusionParams(now=NOW, turn_offset=0.0, composite_weight=0.1, composite_tau_days=90,
                     default_importance=0.5)
    fresh = TurnCandidate(1, "s", NOW, "x", 0.2)
    assert turn_score(fresh, p) == pytest.approx(similarity(0.2) + 0.1 * 0.5)


def test_lexical_weight_adds_the_query_words() -> None:
    p = FusionParams(now=NOW, turn_offset=0.0, composite_weight=0.0, lexical_weight=0.05)
    memories = [mem("a", 0.80, content="went hiking"), mem("b", 0.79,
                                                           content="the pottery class")]
    assert keys(fuse(memories, [], k=2, params=P, query_text="pottery")) == ["m:a", "m:b"]
    assert keys(fuse(memories, [], k=2, params=p, query_text="pottery")) == ["m:b", "m:a"]


def test_k_caps_the_answer_and_must_not_be_negative() -> None:
    assert len(fuse([mem(str(i), 0.5) for i in range(5)], [], k=3, params=P)) == 3
    with pytest.raises(ValueError):
        fuse([], [], k=-1, params=P)


def test_budget_keeps_rank_order_and_skips_what_does_not_fit() -> None:
    items = fuse([mem("a", 0.9), mem("b", 0.8), mem("c", 0.7)], [], k=3, params=P)
    cost = {"m:a": 40, "m:b": 70, "m:c": 30}
    assert keys(within_budget(items, 100, lambda i: cost[i.key])) == ["m:a", "m:c"]
    assert keys(within_budget(items, None, lambda i: cost[i.key])) == ["m:a", "m:b", "m:c"]
    assert within_budget(items, 10, lambda i: cost[i.key]) == []


# --- rank calibration (the default for the fused strategy) ---------------------------------
R = FusionParams(now=NOW, calibration="rank", composite_weight=0.0, stale_penalty=0.2)


def test_rank_calibration_meets_each_kinds_top_whatever_their_scales() -> None:
    memories = [mem(f"m{i}", 0.95 - i * 0.01) for i in range(3)]
    turns = [turn(i, 0.60 - i * 0.01) for i in range(3)]  # a lower scale altogether
    out = fuse(memories, turns, k=6, params=R)
    assert keys(out) == ["m:m0", "t:0", "m:m1", "t:1", "m:m2", "t:2"]


def test_a_memory_weight_above_one_keeps_more_memories_on_top() -> None:
    memories = [mem(f"m{i}", 0.8) for i in range(5)]
    turns = [turn(i, 0.9) for i in range(5)]
    heavy = replace(R, memory_weight=1.05)
    assert [i.kind for i in fuse(memories, turns, k=5, params=heavy)][:4] == ["memory"] * 4


def test_rank_calibration_puts_stale_turns_last_and_keeps_provenance_rules() -> None:
    out = fuse([mem("a", 0.8, (7,))], [turn(1, 0.9), turn(7, 0.85), turn(2, 0.5)], k=5,
               params=R, stale={1})
    assert keys(out) == ["m:a", "t:2", "t:1"]
    assert [q.seq for q in out[0].quotes] == [7]


def test_rank_calibration_orders_turns_by_the_query_words_too() -> None:
    lexical = replace(R, lexical_weight=1.0)
    turns = [turn(1, 0.9, "we watched a movie"), turn(2, 0.89, "the pottery class was fun"),
             turn(3, 0.88, "nice weather")]
    assert keys(fuse([], turns, k=3, params=R, query_text="pottery class")) == \
        ["t:1", "t:2", "t:3"]
    assert keys(fuse([], turns, k=3, params=lexical, query_text="pottery class"))[0] == "t:2"


def test_a_turn_carries_the_most_sensitive_label_a_citing_memory_gives_it() -> None:
    own = replace(turn(1, 0.9), sensitivity="beliefs")
    plain, other = turn(2, 0.8), turn(3, 0.7)
    inherited = {1: "crisis", 2: "health"}
    shown = carry_labels([own, plain, other], inherited, include_sensitive=True)
    assert [(t.seq, t.sensitivity) for t in shown] == [(1, "crisis"), (2, "health"), (3, None)]
    assert shown[2] is other  # untouched turns are the same objects
    assert carry_labels([own, plain, other], inherited, include_sensitive=False) == [other]
    assert carry_labels([own], {}, include_sensitive=False) == []  # its own label suffices
