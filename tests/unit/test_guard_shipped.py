"""The meaning layer's model for the offline e5 embedder ships in the package, trained on the
bank that ships beside it (issue 30): a changed bank without a new model fails here."""

from __future__ import annotations

import json
from importlib import resources

from eros.guard.core.guard_meaning import load_bank, load_shipped, shipped_path
from eros.providers.offline.e5 import E5_DIM, E5_MODEL_NAME


def test_shipped_e5_model_matches_the_bank() -> None:
    document = json.loads(resources.files("eros.data").joinpath(shipped_path(E5_MODEL_NAME))
                          .read_text(encoding="utf-8"))
    bank = load_bank()
    assert document["bank_digest"] == bank.digest, \
        "the bank changed: run scripts/ship_guard_model.py"
    assert document["embedding_model"] == E5_MODEL_NAME
    assert document["exemplars"] == len(bank.exemplars)
    model = load_shipped(E5_MODEL_NAME, bank.digest)
    assert model is not None and model.usable
    assert len(model.weights) == len(model.mean) == len(model.scale) == E5_DIM


def test_a_model_for_another_bank_or_embedder_is_not_used() -> None:
    assert load_shipped(E5_MODEL_NAME, "0" * 16) is None
    assert load_shipped("voyage-3.5-lite", load_bank().digest) is None


def test_scores_hold_for_vectors_padded_to_embedding_dim() -> None:
    model = load_shipped(E5_MODEL_NAME, load_bank().digest)
    assert model is not None
    vector = [0.01 * ((i * 7) % 13 - 6) for i in range(E5_DIM)]
    assert model.scores([vector]) == model.scores([vector + [0.0] * 128])
