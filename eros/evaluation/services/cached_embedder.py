"""An :class:`~eros.providers.base.Embedder` that remembers its vectors across ``eros eval``
runs (:mod:`eros.evaluation.db.eval_cache`): the second run of a suite embeds nothing it has
seen."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eros.evaluation.db.eval_cache import VectorCache, cache_key
from eros.providers.base import Embedder, Embeddings, InputType


@dataclass
class CachedEmbedder:
    inner: Embedder
    cache: VectorCache
    hits: int = 0
    misses: int = 0
    name: str = ""
    offline: bool = True

    def __post_init__(self) -> None:
        self.name, self.offline = self.inner.name, getattr(self.inner, "offline", True)

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        keys = [cache_key(self.inner.name, input_type, t) for t in texts]
        found = self.cache.get(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True)
                                     if k not in found))
        if missing:
            fresh = self.inner.embed(missing, input_type=input_type)
            # the provider counts tokens per call: share them by length for the cache
            total_chars = sum(len(t) for t in missing) or 1
            rows = [(cache_key(self.inner.name, input_type, t), v,
                     round(fresh.total_tokens * len(t) / total_chars))
                    for t, v in zip(missing, fresh.vectors, strict=True)]
            self.cache.put(rows)
            found.update({k: (v, n) for k, v, n in rows})
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        return Embeddings([found[k][0] for k in keys], sum(found[k][1] for k in keys),
                          self.inner.name)
