"""The offline embedder: feature hashing into a unit vector, stdlib only.

Not a model: texts sharing words (or, in CJK text, characters and bigrams) share buckets, so
they have a clearly positive cosine; identical texts get identical vectors. Used by the offline
provider and by the test suite's fake Voyage server, so both speak the same vector space.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

#: the hash embedder's name, and the model its vectors are recorded under
HASH_MODEL: Final = "local-hash"

#: Hiragana/katakana, CJK ideographs and compatibility ideographs, Hangul syllables.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
HAS_CJK = re.compile(f"[{CJK}]")

_TOKEN = re.compile(f"[{CJK}]+|[^\\W_{CJK}]+")


def _features(text: str) -> list[tuple[str, float]]:
    """Words (1.0) and their padded trigrams (0.5); CJK runs give bigrams (1.0), unigrams (0.5)."""
    feats: list[tuple[str, float]] = []
    for token in _TOKEN.findall(text.lower()):
        if HAS_CJK.match(token):
            feats.extend((f"u:{ch}", 0.5) for ch in token)
            feats.extend((f"b:{token[i:i + 2]}", 1.0) for i in range(len(token) - 1))
        else:
            feats.append((f"w:{token}", 1.0))
            padded = f"#{token}#"
            feats.extend((f"t:{padded[i:i + 3]}", 0.5) for i in range(len(padded) - 2))
    return feats


def hash_embedding(text: str, dim: int) -> list[float]:
    """A deterministic unit vector of ``dim`` floats: signed feature hashing via blake2b.

    Texts sharing words share buckets (positive cosine); a text with no features gets e_0, so
    the vector is never zero or NaN and pgvector's cosine distance stays defined.
    """
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    vec = [0.0] * dim
    for feature, weight in _features(text):
        digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8,
                                 person=b"eros-hash-emb").digest()
        value = int.from_bytes(digest, "big")
        vec[(value >> 1) % dim] += weight if value & 1 else -weight
    norm = math.sqrt(sum(x * x for x in vec))
    if norm < 1e-12:
        return [1.0] + [0.0] * (dim - 1)
    return [x / norm for x in vec]


@dataclass(frozen=True)
class OfflineEmbeddings:
    """What ``LocalEmbedder.embed`` returns; the core adapts it to its own result type."""

    vectors: list[list[float]]
    total_tokens: int
    model: str = HASH_MODEL


class LocalEmbedder:
    """Structural match for the core's embedding provider protocol, backed by hash_embedding."""

    name = HASH_MODEL

    def __init__(self, dim: int) -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim = dim

    def embed(self, texts: Sequence[str], input_type: str) -> OfflineEmbeddings:
        """Embed ``texts`` in order. ``input_type`` ("query"/"document") is accepted and ignored:
        hashing is symmetric, so queries and documents already live in one space."""
        return OfflineEmbeddings(
            vectors=[hash_embedding(t, self.dim) for t in texts],
            total_tokens=sum(len(t) // 4 for t in texts), model=self.name)
