"""What a recall query asks for (eros/recall/core/fusion_intent.py) and what ``fused`` does with
it: a remark lets the memories lead, a question about the past is ranked as before."""

from __future__ import annotations

from dataclasses import replace

import pytest

from eros.recall.core.fusion import FusionParams, fuse
from eros.recall.core.fusion_intent import for_intent, is_question
from tests.unit.test_fusion import NOW, keys, mem, turn


@pytest.mark.parametrize("text", [
    "When did Caroline go to the support group?", "¿Cuándo empezó a correr", "Wann war das?",
    "Il est parti quand ?", "ما اسم أخيها؟", "他什么时候去的", "你喜欢猫吗", "你去过北京吗？",
    "Why did she quit", "Qual é o nome dela", "Pourquoi il a déménagé", "Perché è partita",
    "Quel âge a son fils", "Welche Farbe mag sie", "Ինչ՞ու", "Τι ώρα είναι\u037e",
    None, "", "   ",
])
def test_a_question_in_any_script_or_with_an_interrogative_opening(text: str | None) -> None:
    assert is_question(text)


@pytest.mark.parametrize("text", [
    "His hands were trembling so badly at lunch that I had to cut his food for him.",
    "Mañana me toca presentar el proyecto delante del director general.",
    "Die Bahn ist heute zwischen zwei Stationen zwanzig Minuten stehen geblieben.",
    "When I got home the lights were off.", "Como siempre, llegué tarde.",
    "Wie immer war der Zug voll.", "Was tired all day.", "今天下雨了。",
])
def test_a_remark_is_not_a_question(text: str) -> None:
    assert not is_question(text)


P = FusionParams(now=NOW, turn_offset=0.0, stale_penalty=0.2, composite_weight=0.0,
                 calibration="standing", lexical_weight=0.0, memory_tail_after=25)
REMARK = "my stomach is in knots about the commute"


def _pools() -> tuple[list, list]:  # type: ignore[type-arg]
    # the turns stand out of their pool, the memories do not: turns lead the ranking
    memories = [mem(f"m{i}", 0.80 - i * 0.005) for i in range(12)]
    turns = [turn(i, 0.95 - i * 0.01) for i in range(12)]
    return memories, turns


def test_on_a_remark_a_small_memory_pool_follows_the_rankings_first_items() -> None:
    memories, turns = _pools()
    plain = fuse(memories, turns, k=24, params=P, query_text=REMARK)
    assert [i.kind for i in plain[:10]].count("memory") < 9
    out = fuse(memories, turns, k=24, params=replace(P, remark_tail_after=3),
                query_text=REMARK)
    # the first 3 are the ranking's; then every memory left, then the turns left
    assert keys(out[:3]) == keys(plain[:3])
    kinds = [i.kind for i in out[3:]]
    assert kinds == sorted(kinds)
    assert sorted(keys(out)) == sorted(keys(plain))


def test_a_question_or_an_echoed_remark_is_ranked_as_before() -> None:
    memories, turns = _pools()
    params = replace(P, remark_tail_after=3)
    question = "what did I say about the commute?"
    assert keys(fuse(memories, turns, k=24, params=params, query_text=question)) == \
        keys(fuse(memories, turns, k=24, params=P, query_text=question))
    echoed = [turn(0, 0.95, "my stomach was in knots on the commute again"), *turns[1:]]
    assert keys(fuse(memories, echoed, k=24, params=params, query_text=REMARK)) == \
        keys(fuse(memories, echoed, k=24, params=P, query_text=REMARK))


def test_for_intent_changes_only_a_remarks_tail() -> None:
    params = replace(P, remark_tail_after=3)
    assert for_intent(params, "it snowed", []).memory_tail_after == 3
    assert for_intent(params, "did it snow?", []).memory_tail_after == 25
    assert for_intent(params, None, []).memory_tail_after == 25
    assert for_intent(P, "it snowed", []) is P


def test_the_remark_tail_is_on_by_default_after_3_items() -> None:
    from eros.recall.services.recall_fused import fusion_params
    from eros.settings import Settings

    params = fusion_params(Settings(), NOW)
    assert params.remark_tail_after == 3
    assert for_intent(params, REMARK, []).memory_tail_after == 3


LEAD = replace(P, remark_tail_after=3, remark_lead_turns=True)


def test_on_a_remark_only_the_turns_that_lead_the_list_keep_their_places() -> None:
    # one memory stands out most, then the turns and the memories interleave
    memories, turns = _pools()
    memories = [mem("m0", 0.84), *memories[1:]]
    fixed = fuse(memories, turns, k=24, params=replace(LEAD, remark_lead_turns=False),
                 query_text=REMARK)
    assert fixed[0].kind == "memory" and "turn" in [i.kind for i in fixed[1:3]]
    out = fuse(memories, turns, k=24, params=LEAD, query_text=REMARK)
    # the list opens with a memory: what is known leads whole, no turn ranked below it first
    assert [i.kind for i in out] == ["memory"] * 12 + ["turn"] * 12
    assert sorted(keys(out)) == sorted(keys(fixed))
    # two turns stand far out of their pool and lead the ranking: they keep their places
    leading = [turn(90, 0.99), turn(91, 0.985), *(turn(i, 0.60 - i * 0.005) for i in range(12))]
    out = fuse(_pools()[0], leading, k=26, params=LEAD, query_text=REMARK)
    assert keys(out[:2]) == ["t:90", "t:91"]
    assert [i.kind for i in out[2:]] == ["memory"] * 12 + ["turn"] * 12


def test_at_most_the_remark_tail_after_leading_turns_keep_their_places() -> None:
    memories = _pools()[0]
    leading = [turn(90 + i, 0.99 - i * 0.001) for i in range(5)] + \
        [turn(i, 0.50 - i * 0.001) for i in range(30)]
    out = fuse(memories, leading, k=47, params=LEAD, query_text=REMARK)
    assert keys(out[:3]) == ["t:90", "t:91", "t:92"]
    assert [i.kind for i in out[3:15]] == ["memory"] * 12


def test_a_question_keeps_its_ranking_with_the_leading_turns_rule() -> None:
    memories, turns = _pools()
    question = "what did I say about the commute?"
    assert keys(fuse(memories, turns, k=24, params=LEAD, query_text=question)) == \
        keys(fuse(memories, turns, k=24, params=P, query_text=question))


def test_only_leading_turns_keep_their_places_on_a_remark_by_default() -> None:
    from eros.recall.services.recall_fused import fusion_params
    from eros.settings import Settings

    params = fusion_params(Settings(), NOW)
    assert params.remark_lead_turns is True
    assert for_intent(params, REMARK, []).memory_tail_at_memory is True
    assert for_intent(params, "did it snow?", []).memory_tail_at_memory is False
    assert fusion_params(Settings(recall_fusion_remark_lead_turns=False),
                         NOW).remark_lead_turns is False


def _long(memories: list, words: int = 9) -> list:  # type: ignore[type-arg]
    """The memories with a line of ``words`` × 4 characters each (about ``words`` tokens):
    a pool too costly for the memory tail of P."""
    return [mem(m.candidate.id, m.similarity, content=f"{m.candidate.id:<4}" * words)
            for m in memories]


def _expected_window(fixed: list, head: int, count: int) -> list[str]:  # type: ignore[type-arg]
    window = [i for i in fixed[head:] if i.kind == "memory"][:count]
    return keys(fixed[:head]) + keys(window) + [k for k in keys(fixed[head:])
                                                 if k not in keys(window)]


def test_on_a_remark_the_best_memories_of_any_pool_take_the_first_window() -> None:
    memories, turns = _pools()
    memories = _long(memories)
    line = _estimated_cost(memories[0])
    window = replace(LEAD, memory_tail_tokens=50, remark_memory_tokens=4 * line)
    fixed = fuse(memories, turns, k=24, params=replace(window, remark_memory_tokens=0),
                 query_text=REMARK)
    # the pool renders past the tail's 50 tokens: the ranking interleaves the two kinds
    assert [i.kind for i in fixed[:8]].count("turn") >= 3
    out = fuse(memories, turns, k=24, params=window, query_text=REMARK)
    head = next(i for i, item in enumerate(fixed) if item.kind == "memory")
    assert head <= 3
    # the turns that lead keep their places, then the 4 best memories, then the rest as ranked
    assert keys(out) == _expected_window(fixed, head, 4) != keys(fixed)
    question = "what did I say about the commute?"
    assert keys(fuse(memories, turns, k=24, params=window, query_text=question)) == \
        keys(fuse(memories, turns, k=24, params=replace(window, remark_memory_tokens=0),
                  query_text=question))


def test_by_default_a_pool_past_the_tail_keeps_its_best_memories_first_on_a_remark() -> None:
    """The window is on (half the default budget): a pool just past the tail's tokens gives
    a remark's first tokens the memories the tail would have given, not chatty turns."""
    from eros.recall.services.recall_fused import fusion_params
    from eros.settings import Settings

    shipped = fusion_params(Settings(), NOW)
    assert 0 < shipped.remark_memory_tokens <= shipped.memory_tail_tokens
    memories, turns = _pools()
    memories = _long(memories)
    line = _estimated_cost(memories[0])
    # the tail's tokens a little under the pool's, a window of all but a few memories
    small = replace(LEAD, memory_tail_tokens=len(memories) * line - 1)
    fixed = fuse(memories, turns, k=24, params=small, query_text=REMARK)
    assert [i.kind for i in fixed[:8]].count("turn") >= 3
    window = (len(memories) - 3) * line
    out = fuse(memories, turns, k=24, params=replace(small, remark_memory_tokens=window),
               query_text=REMARK)
    head = next(i for i, item in enumerate(fixed) if item.kind == "memory")
    fits = len(memories) - 3
    assert keys(out) == _expected_window(fixed, head, fits)
    assert [i.kind for i in out[head:head + fits]] == ["memory"] * fits


def test_on_a_remark_the_leading_turns_keep_their_places_within_their_tokens() -> None:
    memories = _pools()[0]
    leading = [turn(90 + i, 0.99 - i * 0.001) for i in range(5)] + \
        [turn(i, 0.50 - i * 0.001) for i in range(30)]
    one = _estimated_cost(fuse([], leading[:1], k=1, params=LEAD)[0])
    out = fuse(memories, leading, k=47, params=replace(LEAD, remark_lead_tokens=one),
               query_text=REMARK)
    assert keys(out[:1]) == ["t:90"]
    assert [i.kind for i in out[1:13]] == ["memory"] * 12


def _estimated_cost(item: object) -> int:
    from eros.core.text import estimate_tokens
    if not hasattr(item, "kind"):
        return estimate_tokens(item.candidate.content) + 1  # type: ignore[attr-defined]
    return estimate_tokens(item.content) + 1  # type: ignore[attr-defined]


def test_on_a_remark_a_chatty_leading_turn_goes_after_what_is_known_with_the_cap() -> None:
    from eros.recall.services.recall_fused import fusion_params, item_tokens
    from eros.settings import Settings

    off = fusion_params(Settings(), NOW)
    assert off.remark_lead_tokens == 0
    cfg = Settings(recall_fusion_remark_lead_tokens=20)
    # the window off: it prices memories with item_tokens, which reads a memory's id as a
    # UUID (these are not); the window has its own tests above
    params = replace(fusion_params(cfg, NOW), calibration="standing", lexical_weight=0.0,
                     newer_first_depth=0, remark_memory_tokens=0)
    assert params.remark_lead_tokens == 20
    memories = _pools()[0]
    short, chatty = turn(90, 0.99, "dad called"), \
        turn(91, 0.99, "so the whole afternoon went by on the phone with the bank again, "
                       "and then the bus was late, and the rain")
    tail = [turn(i, 0.50 - i * 0.001) for i in range(30)]
    # a short turn that leads keeps its place; a chatty one gives it to what is known
    out = fuse(memories, [short, *tail], k=43, params=params, query_text=REMARK,
               cost=item_tokens(cfg))
    assert keys(out[:1]) == ["t:90"] and [i.kind for i in out[1:13]] == ["memory"] * 12
    out = fuse(memories, [chatty, *tail], k=43, params=params, query_text=REMARK,
               cost=item_tokens(cfg))
    assert [i.kind for i in out[:12]] == ["memory"] * 12 and "t:91" in keys(out)
    uncapped = replace(params, remark_lead_tokens=0)
    out = fuse(memories, [chatty, *tail], k=43, params=uncapped, query_text=REMARK,
               cost=item_tokens(cfg))
    assert keys(out[:1]) == ["t:91"]
