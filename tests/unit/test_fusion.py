"""The fused strategy's rules, pure (eros/recall/core/fusion.py): one calibrated score for memories
and turns, provenance deciding what is returned once, stale turns demoted, the budget."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from eros.core.names import RECALL_STRATEGIES
from eros.recall.core.fusion import (
    FusionParams,
    TurnCandidate,
    carry_labels,
    fuse,
    turn_score,
)
from eros.recall.core.fusion_subject import named
from eros.recall.core.fusion_words import cited
from eros.recall.core.ranking import Candidate, Scored, similarity
from eros.recall.core.render_fused import within_budget

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
    # a limit: the first kept, what follows never priced (the same as cutting the full answer)
    priced: list[str] = []

    def price(i: object) -> int:
        priced.append(i.key)  # type: ignore[attr-defined]
        return cost[i.key]  # type: ignore[attr-defined]
    assert keys(within_budget(items, 100, price, limit=1)) == ["m:a"] and priced == ["m:a"]
    assert keys(within_budget(items, 100, price, limit=2)) == ["m:a", "m:c"]
    assert keys(within_budget(items, None, price, limit=2)) == ["m:a", "m:b"]


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


def test_a_turn_sharing_one_word_with_the_query_gets_no_lexical_rank() -> None:
    # LoCoMo, heuristic extractor: the user's own name in the question matched a chatty turn
    # that says only the name ("Glad you agree, Caroline") and BM25 over the turn pool put it
    # first for every question about her (bench/RESULTS.md, issue 31 fourth round)
    turns = [turn(1, 0.90, "I chose them because they help LGBTQ folks adopt"),
             turn(2, 0.89, "we watched a movie"),
             turn(3, 0.85, "Glad you agree, Caroline.")]
    q = "Why did Caroline choose the adoption agency for LGBTQ folks?"
    one = replace(R, lexical_weight=1.0, lexical_min_terms=1)
    two = replace(one, lexical_min_terms=2)
    assert keys(fuse([], turns, k=3, params=one, query_text=q)) == ["t:1", "t:3", "t:2"]
    assert keys(fuse([], turns, k=3, params=two, query_text=q)) == ["t:1", "t:2", "t:3"]
    # a query of one word needs only that word
    assert keys(fuse([], turns, k=3, params=two, query_text="Caroline"))[0] == "t:3"


def test_a_turn_carries_the_most_sensitive_label_a_citing_memory_gives_it() -> None:
    own = replace(turn(1, 0.9), sensitivity="beliefs")
    plain, other = turn(2, 0.8), turn(3, 0.7)
    inherited = {1: "crisis", 2: "health"}
    shown = carry_labels([own, plain, other], inherited, include_sensitive=True)
    assert [(t.seq, t.sensitivity) for t in shown] == [(1, "crisis"), (2, "health"), (3, None)]
    assert shown[2] is other  # untouched turns are the same objects
    assert carry_labels([own, plain, other], inherited, include_sensitive=False) == [other]
    assert carry_labels([own], {}, include_sensitive=False) == []  # its own label suffices


# --- calibration by standing ---------------------------------------------------------------
S = FusionParams(now=NOW, calibration="standing", composite_weight=0.0, turn_offset=0.0,
                 stale_penalty=0.2)


def test_standing_gives_the_top_slots_to_the_kind_whose_best_stands_out() -> None:
    # memories on a high scale with nothing standing out; one turn far above its own pool
    memories = [mem(f"m{i}", 0.90 - i * 0.001) for i in range(10)]
    turns = [turn(0, 0.80)] + [turn(i, 0.70 - i * 0.001) for i in range(1, 10)]
    out = fuse(memories, turns, k=3, params=S)
    assert keys(out)[0] == "t:0"
    # the same turn pool beside a memory standing out further above its (larger) pool: the
    # memory leads, the turn follows
    memories = [mem("m0", 0.99)] + [mem(f"m{i}", 0.90 - i * 0.001) for i in range(1, 30)]
    assert keys(fuse(memories, turns, k=3, params=S))[:2] == ["m:m0", "t:0"]


def test_standing_lets_the_turns_lead_when_one_says_the_query_in_its_own_words() -> None:
    # the memory stands out further above its pool than the turn does above its own: the
    # memory leads — unless a turn of the pool says the question's words (half of them, two
    # at least), when the user's own words answer it and the turns gain lexical_lead sds
    memories = [mem("m0", 0.93)] + [mem(f"m{i}", 0.90 - i * 0.001) for i in range(1, 30)]
    turns = [turn(0, 0.80, "we adopted a puppy named Rex from the shelter")] + \
        [turn(i, 0.70 - i * 0.001) for i in range(1, 10)]
    lead = replace(S, lexical_lead=1.0, lexical_min_terms=2)
    asked = "What puppy did they adopt from the shelter?"  # puppy adopt shelter: 2 of 3 said
    assert keys(fuse(memories, turns, k=2, params=replace(lead, lexical_lead=0.0),
                     query_text=asked)) == ["m:m0", "t:0"]
    assert keys(fuse(memories, turns, k=2, params=lead, query_text=asked)) == ["t:0", "m:m0"]
    # one word of the question said (the name), or under half of them: no lead
    assert keys(fuse(memories, turns, k=2, params=lead,
                     query_text="Is Rex happy?"))[0] == "m:m0"
    assert keys(fuse(memories, turns, k=2, params=lead,
                     query_text="Which shelter animals did the family visit last spring?"
                     ))[0] == "m:m0"


def test_standing_keeps_the_memories_when_no_turn_stands_out() -> None:
    memories = [mem(f"m{i}", 0.95 - i * 0.02) for i in range(5)] + \
        [mem(f"x{i}", 0.70) for i in range(20)]
    turns = [turn(i, 0.80 - i * 0.0005) for i in range(30)]  # a flat pool
    out = fuse(memories, turns, k=5, params=S)
    assert keys(out) == [f"m:m{i}" for i in range(5)]


def test_standing_turn_offset_is_in_standard_deviations_and_stale_turns_go_last() -> None:
    memories = [mem(f"m{i}", 0.90 - i * 0.01) for i in range(10)]
    turns = [turn(i, 0.90 - i * 0.01) for i in range(10)]  # the same shape: ties
    tied = fuse(memories, turns, k=2, params=S)
    assert keys(tied) == ["m:m0", "t:0"]  # at equal standing the memory first
    offset = fuse(memories, turns, k=2, params=replace(S, turn_offset=0.5))
    assert keys(offset) == ["m:m0", "m:m1"]
    stale = fuse(memories[:3], turns[:3], k=6, params=S, stale={0})
    assert keys(stale)[-1] == "t:0" and len(stale) == 6


# --- the newer statement on the same specific subject first --------------------------------
def test_a_newer_turn_on_the_same_subject_goes_before_the_older_one() -> None:
    old = turn(1, 0.90, "My boyfriend Tom is a chef.")
    new = replace(turn(9, 0.80, "I broke up with Tom last weekend."),
                  said_at=NOW - timedelta(days=3))
    others = [turn(i, 0.85 - i * 0.01, f"we walked the dog number {i}") for i in range(2, 8)]
    on = replace(P, newer_first_depth=20)
    assert keys(fuse([], [old, *others, new], k=3, params=P,
                     query_text="How are things with your boyfriend?"))[0] == "t:1"
    out = fuse([], [old, *others, new], k=3, params=on,
               query_text="How are things with your boyfriend?")
    assert keys(out)[:2] == ["t:9", "t:1"]  # nothing dropped: the older one follows


def test_newer_first_ignores_the_querys_words_common_words_and_a_memorys_own_source() -> None:
    on = replace(P, newer_first_depth=20)
    old = turn(1, 0.90, "the pottery class was fun")
    new = replace(turn(2, 0.80, "pottery class again, messy"), said_at=NOW)
    # the shared words are the query's own: no subject of their own, the ranking stands
    assert keys(fuse([], [old, new], k=2, params=on, query_text="pottery class")) == \
        ["t:1", "t:2"]
    # a memory is never newer than the turn it was written from
    source = turn(5, 0.95, "My sister Ana moved to Lisbon.")
    written = replace(mem("a", 0.80, (5,), content="Sister Ana lives in Lisbon."))
    assert keys(fuse([written], [source], k=2, params=on))[0] == "t:5"


def test_newer_first_moves_nothing_on_shared_everyday_words() -> None:
    # LoCoMo: "just", "really", "great", "thanks" — shared by many turns of one conversation,
    # none of them a subject; moving the newer one first cost 4.2 points of recall@10
    on = replace(P, newer_first_depth=20)
    old = turn(1, 0.90, "Thanks! The painting class was really great.")
    new = replace(turn(2, 0.80, "Really great news, thanks, the kids loved the lake."),
                  said_at=NOW)
    others = [turn(i, 0.85 - i * 0.01, f"we walked the dog number {i}") for i in range(3, 9)]
    assert keys(fuse([], [old, *others, new], k=2, params=on,
                     query_text="What did she paint?")) == ["t:1", "t:3"]


def test_a_subject_is_a_word_written_as_a_name_inside_a_sentence() -> None:
    assert named(["My boyfriend Tom is a chef.", "Really? I met Ana in Lisbon!",
                  "Great. Thanks, it was fun"]) == {"tom", "ana", "lisbon"}


def test_newer_first_reads_a_cjk_name_as_its_bigram() -> None:
    on = replace(P, newer_first_depth=20)
    old = turn(1, 0.90, "我男朋友阿杰是厨师。")
    new = replace(turn(2, 0.80, "我和阿杰上周末分手了。"), said_at=NOW)
    others = [turn(i, 0.85 - i * 0.01, f"今天天气{i}很好") for i in range(3, 9)]
    assert keys(fuse([], [old, *others, new], k=2, params=on,
                     query_text="你和男朋友最近怎么样？")) == ["t:2", "t:1"]


def test_standing_over_a_pool_too_small_to_have_a_spread_is_calibrated_by_rank() -> None:
    out = fuse([mem("a", 0.85)], [turn(1, 0.90), turn(2, 0.80)], k=3, params=S)
    assert keys(out) == ["m:a", "t:1", "t:2"]  # as rank calibration puts them


def tokens_of(item) -> int:  # type: ignore[no-untyped-def]
    """A test's cost: a token per 4 characters of the item's text, at least one."""
    return max(1, len(item.content) // 4)


def test_a_shorter_memory_stands_in_for_the_turn_it_cites_in_the_turns_place() -> None:
    memories = [mem("b", 0.75), mem("a", 0.60, (7,), content="short fact")]
    turns = [turn(7, 0.90, "a long turn " * 20), turn(8, 0.70)]
    params = replace(P, memory_stands_in=True)
    out = fuse(memories, turns, k=4, params=params, cost=tokens_of)
    assert keys(out) == ["m:a", "m:b", "t:8"]
    assert [q.seq for q in out[0].quotes] == [7]
    # off: the turn keeps its place and the memory adds nothing below it
    assert keys(fuse(memories, turns, k=4, params=P, cost=tokens_of)) == ["t:7", "m:b", "t:8"]


def test_a_longer_memory_does_not_stand_in_for_a_short_turn() -> None:
    memories = [mem("a", 0.60, (7,), content="a much longer memory than the turn " * 3)]
    out = fuse(memories, [turn(7, 0.90, "short")], k=3, cost=tokens_of,
               params=replace(P, memory_stands_in=True))
    assert keys(out) == ["t:7"]


def test_a_memory_stands_in_once_for_the_turns_it_cites() -> None:
    memories = [mem("a", 0.60, (7, 8), content="short fact")]
    turns = [turn(7, 0.90, "a long turn " * 20), turn(8, 0.85, "another long turn " * 20)]
    out = fuse(memories, turns, k=3, cost=tokens_of, params=replace(P, memory_stands_in=True))
    assert keys(out) == ["m:a"]
    assert [q.seq for q in out[0].quotes] == [7, 8]


# --- fifth round: lexical ties, restatements of passed-over turns -------------------------
def test_turns_without_a_lexical_rank_share_the_remaining_places_with_ties() -> None:
    # without ties any turn BM25 ranks goes before every other: the dense pool's 2nd turn
    # (no two query words) fell below a far turn that says two of them
    turns = [turn(1, 0.90, "we watched a movie"), turn(2, 0.89, "she paints every weekend")] + \
        [turn(i, 0.80 - i * 0.001, f"filler {i}") for i in range(3, 30)] + \
        [turn(40, 0.70, "the pottery class was fun")]
    q = "pottery class"
    plain = replace(R, lexical_weight=1.0, lexical_min_terms=2)
    tied = replace(plain, lexical_ties=True)
    assert keys(fuse([], turns, k=3, params=plain, query_text=q)) == ["t:40", "t:1", "t:2"]
    # tied: the unranked share the places after the one ranked turn (their mid-rank), so
    # the dense order's head keeps its place and the lexical match, 30th by meaning, still
    # rises to 10th
    out = keys(fuse([], turns, k=30, params=tied, query_text=q))
    assert out[:2] == ["t:1", "t:2"]
    assert out.index("t:40") == 9


def test_a_memory_restating_a_turn_the_search_passed_over_is_left_out() -> None:
    # the heuristic extractor's clause of turn 9 ("feels" for "feel"): turn 9 is not in the
    # turn pool, its text was read as the memory's quote (lifted)
    restated = mem("r", 0.85, (9,), content="feels tired after the long shift")
    written = mem("w", 0.84, (8,), content="Maya is exhausted by her night shifts")
    lifted = [turn(9, 0.60, "I feel so tired after the long shift today"),
              turn(8, 0.60, "night shifts again, I can barely keep my eyes open")]
    pool = [turn(1, 0.80), turn(2, 0.79)]
    on = replace(P, drop_unfound_restatements=True)
    assert keys(fuse([restated, written], pool, k=4, params=P, lifted=lifted)) == \
        ["m:r", "m:w", "t:1", "t:2"]
    assert keys(fuse([restated, written], pool, k=4, params=on, lifted=lifted)) == \
        ["m:w", "t:1", "t:2"]
    # a restatement of a turn the search found is the turn's business (said once), kept;
    # so is one whose turn's text is unknown (not read: no new round trip)
    found = [turn(9, 0.70, "I feel so tired after the long shift today")]
    assert "m:r" in keys(fuse([restated], found, k=2, params=on))
    assert keys(fuse([restated], pool, k=3, params=on)) == ["m:r", "t:1", "t:2"]


# --- the rest of a small memory pool before the rest of the turns ----------------------------


def test_after_the_head_the_rest_of_a_cheap_memory_pool_goes_before_the_rest_of_the_turns(
) -> None:
    # the turns stand out of their pool, the memories do not: turns and memories interleave
    memories = [mem(f"m{i}", 0.80 - i * 0.01) for i in range(8)]
    turns = [turn(i, 0.95 - i * 0.01) for i in range(8)]
    plain = fuse(memories, turns, k=16, params=S)
    assert plain[2].kind == "turn" and plain[-1].kind == "memory"
    tail = replace(S, memory_tail_after=3)
    out = fuse(memories, turns, k=16, params=tail)
    # the head is the ranking's own; after it every memory left, in its order, then the turns
    assert keys(out[:3]) == keys(plain[:3])
    rest = out[3:]
    kinds = [i.kind for i in rest]
    assert kinds == sorted(kinds)  # "memory" < "turn": the memories first
    assert [i.key for i in rest if i.kind == "memory"] == \
        [i.key for i in plain[3:] if i.kind == "memory"]
    assert [i.key for i in rest if i.kind == "turn"] == \
        [i.key for i in plain[3:] if i.kind == "turn"]
    # a pool whose rest renders past the tail's tokens keeps the ranking as it is
    assert keys(fuse(memories, turns, k=16, params=replace(tail, memory_tail_tokens=10))) == \
        keys(plain)


def test_the_memory_tail_is_on_by_default_past_25_items_for_a_pool_within_1000_tokens() -> None:
    from eros.recall.services.recall_fused import fusion_params
    from eros.settings import Settings

    params = fusion_params(Settings(), NOW)
    assert (params.memory_tail_after, params.memory_tail_tokens) == (25, 1000)
    # the first 25 items are the ranking's: a K of 10 (RECALL_K) never sees the rule
    memories = [mem(f"m{i}", 0.80 - i * 0.005) for i in range(30)]
    turns = [turn(i, 0.95 - i * 0.005) for i in range(30)]
    plain = fuse(memories, turns, k=60, params=replace(params, memory_tail_after=0))
    out = fuse(memories, turns, k=60, params=params)
    assert keys(out[:25]) == keys(plain[:25]) and keys(out) != keys(plain)
    assert {i.kind for i in out[25:25 + sum(i.kind == "memory" for i in plain[25:])]} == \
        {"memory"}
