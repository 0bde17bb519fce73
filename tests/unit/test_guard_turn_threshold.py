"""The meaning layer's turn threshold (issue 30/31): a user's turn is held to its own,
higher threshold, a memory to the memory threshold; fitted on benign turns, shipped with the
e5 model without touching its weights, memory threshold or bank digest."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources

import pytest
from sqlalchemy import create_engine

from eros.guard.core import guard_meaning
from eros.guard.core.guard_meaning import (
    MeaningModel,
    choose_turn_threshold,
    load_bank,
    load_shipped,
    model_from_dict,
    model_to_dict,
    shipped_path,
)
from eros.guard.services import guard_model
from eros.guard.services.guard_model import Layer, screen_texts
from eros.providers.base import Embeddings
from eros.settings import Settings

#: score = sigmoid(x): x = 1.5 scores 0.818 — above the memory threshold 0.7, below the
#: turn threshold 0.9
MODEL = MeaningModel((1.0,), 0.0, (0.0,), (1.0,), 0.7, 0.95, turn_threshold=0.9)


class OneNumber:
    """Embeds each text as the number it ends with."""

    name = "test-one-number"
    offline = True

    def embed(self, texts: Sequence[str], *, input_type: str) -> Embeddings:
        return Embeddings([[float(t.split()[-1])] for t in texts], 0, self.name)


def test_a_turn_is_held_to_the_turn_threshold_and_a_memory_to_the_memory_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(guard_model, "meaning_layer", lambda *a, **k: Layer("ready", MODEL))
    monkeypatch.setattr(guard_model, "ngram_drops", lambda *a: [])
    screening = screen_texts(Settings(memory_guard_llm="off"), create_engine("sqlite://"),
                             OneNumber(), ["memory scoring 1.5"],
                             turns=["turn scoring 1.5", "turn scoring 3"])
    assert [v.ok for v in screening.verdicts] == [False, True, False]
    assert screening.verdicts[2].layer == "meaning"


def test_without_a_turn_threshold_a_turn_is_held_to_the_memory_threshold() -> None:
    plain = MeaningModel((1.0,), 0.0, (0.0,), (1.0,), 0.7, 0.95)
    assert plain.turn_cut == 0.7
    assert MODEL.turn_cut == 0.9
    assert MODEL.turn_band_low == pytest.approx(0.65)


def test_the_turn_threshold_keeps_all_but_one_in_a_thousand_benign_turns() -> None:
    benign = [i / 2000 for i in range(2000)]  # 0 .. 0.9995
    cut = choose_turn_threshold(0.7, benign)
    assert sum(s >= cut for s in benign) <= 2
    assert cut > 0.99
    assert choose_turn_threshold(0.7, [0.1, 0.2]) == 0.7  # never below the memory threshold
    assert choose_turn_threshold(0.7, []) == 0.7


def test_the_turn_threshold_round_trips_and_is_optional() -> None:
    assert model_from_dict(model_to_dict(MODEL)) == MODEL
    data = model_to_dict(MODEL)
    del data["turn_threshold"]
    assert model_from_dict(data).turn_threshold is None


def test_the_shipped_e5_model_has_a_turn_threshold_above_its_memory_threshold() -> None:
    from eros.providers.offline.e5 import E5_MODEL_NAME

    document = json.loads(resources.files("eros.data").joinpath(shipped_path(E5_MODEL_NAME))
                          .read_text("utf-8"))
    assert document["bank_digest"] == load_bank().digest
    model = load_shipped(E5_MODEL_NAME, load_bank().digest)
    assert model is not None and model.turn_threshold is not None
    assert guard_meaning.MIN_KEPT < 1 and model.threshold < model.turn_threshold <= 1.0
