"""Offline providers behind our protocols, for running with no API keys: the heuristic
extractor (:mod:`.heuristic`) and the hashing embedder (:mod:`.hashing`)."""

from __future__ import annotations

from collections.abc import Sequence

from eros.core.consolidation_reply import REQUEST_HEADER
from eros.providers.base import Completion, Embeddings, InputType
from eros.providers.offline.hashing import LocalEmbedder
from eros.providers.offline.heuristic import OfflineExtractor, offline_consolidation_reply


class OfflineChat:
    """Deterministic heuristic extraction with no network (a demo and load-test aid); a
    consolidation request gets the offline rule "every cluster is duplicates of its newest
    member" (:func:`eros.providers.offline.heuristic.offline_consolidation_reply`)."""

    name = "offline-heuristic"
    offline = True

    def __init__(self) -> None:
        self._inner = OfflineExtractor()

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        if user.startswith(REQUEST_HEADER):
            text = offline_consolidation_reply(user)
            return Completion(text, "stop", "offline-consolidation",
                              (len(system) + len(user)) // 4, len(text) // 4)
        reply = self._inner.complete(system, user, max_tokens)
        return Completion(reply.text, reply.finish_reason, reply.model, reply.prompt_tokens,
                          reply.completion_tokens)


class OfflineEmbedder:
    """Feature-hashing embeddings of the configured size, with no network."""

    name = "local-hash"
    offline = True

    def __init__(self, dim: int) -> None:
        self._inner = LocalEmbedder(dim)

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        result = self._inner.embed(texts, input_type)
        return Embeddings(result.vectors, result.total_tokens, result.model)
