"""``fused`` ordered by value per token (eros/recall/core/fusion_budget.py, ``per_token``;
``FusionParams.token_weight``, a ``bench.fusion_capture`` variant with no setting): a long turn
must stand clearly higher than a short memory to be read first. Off, the ranking is as before."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from eros.recall.core.fusion import FusionParams, fuse
from eros.recall.core.fusion_budget import per_token
from eros.recall.services.recall_fused import fusion_params
from eros.settings import Settings
from tests.unit.test_fusion import NOW, keys, mem, turn

S = FusionParams(now=NOW, turn_offset=0.0, calibration="standing", lexical_weight=0.0)
LONG = "and then we talked for hours about everything that happened at work " * 3


def _pools() -> tuple[list, list]:  # type: ignore[type-arg]
    # the best turn (a long one) a hair nearer the query than the best memory (a short line)
    memories = [mem("short", 0.80)] + [mem(f"x{i}", 0.60 - i * 0.01) for i in range(8)]
    turns = [turn(1, 0.802, LONG)] + [turn(10 + i, 0.60 - i * 0.01) for i in range(8)]
    return memories, turns


def test_off_in_what_recall_ships() -> None:
    params = fusion_params(Settings(), NOW)
    assert params.token_weight == 0 and not params.token_turns_only


def test_a_long_turn_standing_a_hair_higher_goes_after_a_short_memory() -> None:
    memories, turns = _pools()
    off = fuse(memories, turns, k=2, params=S)
    assert keys(off) == ["t:1", "m:short"]
    on = fuse(memories, turns, k=2, params=replace(S, token_weight=0.3))
    assert keys(on) == ["m:short", "t:1"]


def test_a_turn_standing_clearly_higher_keeps_its_place() -> None:
    memories, turns = _pools()
    memories[0] = mem("short", 0.62)  # no memory stands out of its pool
    assert keys(fuse(memories, turns, k=2, params=replace(S, token_weight=0.3)))[0] == "t:1"


def test_a_short_turn_pays_what_a_short_memory_pays() -> None:
    memories, turns = _pools()
    turns[0] = turn(1, 0.802, "turn one ok!")  # as long as "memory short"
    assert keys(fuse(memories, turns, k=2, params=replace(S, token_weight=0.5))) == \
        keys(fuse(memories, turns, k=2, params=S))


def test_the_weight_is_a_log_of_the_tokens() -> None:
    items = [replace(i, score=1.0) for i in fuse([mem("a", 0.8)], [turn(1, 0.8)], k=2,
                                                 params=S)]
    priced = per_token(items, 0.5, lambda i: 8 if i.kind == "memory" else 32)
    assert [round(i.score, 6) for i in priced] == [round(1 - 0.5 * math.log(8), 6),
                                                   round(1 - 0.5 * math.log(32), 6)]
    assert per_token(items, 0.0, lambda i: 1 / 0) == items  # off: nothing is priced


def test_turns_only_prices_a_turn_against_the_memories_median() -> None:
    memories, turns = _pools()
    on = replace(S, token_weight=0.5, token_turns_only=True)
    assert keys(fuse(memories, turns, k=2, params=on)) == ["m:short", "t:1"]
    items = fuse(memories, [turn(1, 0.8)], k=10, params=S)
    priced = per_token(items, 0.5, lambda i: 10 if i.kind == "memory" else 40,
                       turns_only=True)
    for before, after in zip(items, priced, strict=True):
        change = 0.5 * math.log(4) if before.kind == "turn" else 0.0
        assert after.score == pytest.approx(before.score - change)
    shorter = per_token(items, 0.5, lambda i: 10 if i.kind == "memory" else 5,
                        turns_only=True)
    assert [i.score for i in shorter] == [i.score for i in items]  # a shorter turn: free
