"""``fused`` orders near-equal memories by the extractor's importance, whatever their age
(eros/recall/core/fusion.py, ``with_importance``; RECALL_FUSION_IMPORTANCE_WEIGHT)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from eros.recall.core.fusion import FusionParams, fuse, turn_score
from eros.recall.core.ranking import Candidate, Scored
from tests.unit.test_fusion import NOW, keys, turn

S = FusionParams(now=NOW, turn_offset=0.0, calibration="standing", lexical_weight=0.0)


def _mem(id: str, sim: float, importance: float | None, *, days: float = 30) -> Scored:
    c = Candidate(id=id, content=f"memory {id}", category="fact", importance=importance,
                  created_at=NOW - timedelta(days=days), layer="profile", distance=1 - sim)
    return Scored(c, sim, sim)


def _pools(old_days: float) -> tuple[list[Scored], list]:  # type: ignore[type-arg]
    # a confidence (importance 0.9) a hair less similar than an everyday line (0.5), among
    # a flat memory pool and a flat turn pool (nothing stands out of either)
    memories = [_mem("everyday", 0.801, 0.5), _mem("confided", 0.800, 0.9, days=old_days)] + \
        [_mem(f"x{i}", 0.70 - i * 0.001, 0.5) for i in range(10)]
    turns = [turn(i, 0.60 - i * 0.001) for i in range(10)]
    return memories, turns


def test_an_important_memory_goes_before_a_near_equal_everyday_one() -> None:
    memories, turns = _pools(old_days=30)
    off = fuse(memories, turns, k=3, params=S)
    assert keys(off)[:2] == ["m:everyday", "m:confided"]
    on = fuse(memories, turns, k=3, params=replace(S, importance_weight=0.05))
    assert keys(on)[:2] == ["m:confided", "m:everyday"]


def test_the_importance_term_does_not_fade_with_age() -> None:
    """Recency buried the old confidences implicit recall is about: a year-old confidence
    keeps its lead over last week's everyday line."""
    memories, turns = _pools(old_days=400)
    on = fuse(memories, turns, k=3, params=replace(S, importance_weight=0.05))
    assert keys(on)[:2] == ["m:confided", "m:everyday"]


def test_a_clearly_nearer_memory_keeps_its_place_and_a_missing_importance_is_the_default(
) -> None:
    near = [_mem("near", 0.90, 0.1), _mem("important", 0.80, 1.0), _mem("unset", 0.85, None)] + \
        [_mem(f"x{i}", 0.70 - i * 0.001, 0.5) for i in range(10)]
    turns = [turn(i, 0.60 - i * 0.001) for i in range(10)]
    out = fuse(near, turns, k=3, params=replace(S, importance_weight=0.05))
    assert keys(out) == ["m:near", "m:unset", "m:important"]


def test_a_turn_counts_the_default_importance_and_the_setting_reaches_the_fusion() -> None:
    from eros.recall.services.recall_fused import fusion_params
    from eros.settings import Settings

    p = replace(S, importance_weight=0.05, default_importance=0.5)
    t = turn(1, 0.8)
    assert turn_score(t, p) - turn_score(t, S) == pytest.approx(0.05 * 0.5)
    assert fusion_params(Settings(), NOW).importance_weight == 0  # off by default
    on = fusion_params(Settings(recall_fusion_importance_weight=0.05), NOW)
    assert on.importance_weight == 0.05
