"""Outside services behind small protocols; SDK errors are translated here into ours."""

from __future__ import annotations

import logging

from eros.providers.base import ChatCompleter, Completion, Embedder, Embeddings
from eros.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["ChatCompleter", "Completion", "Embedder", "Embeddings", "make_providers"]


def make_providers(settings: Settings) -> tuple[ChatCompleter, Embedder]:
    """Live providers where keys are configured; the offline ones otherwise (announced)."""
    from eros.providers.offline import OfflineChat, make_offline_embedder

    llm: ChatCompleter
    embedder: Embedder
    if settings.llm_is_offline:
        llm = OfflineChat()
        log.warning("LLM provider: offline heuristic extractor (no OPENROUTER_API_KEY or "
                    "EROS_PROVIDERS=offline) — for trying the system and load tests only")
    else:
        from eros.providers.llm import OpenRouterChat

        llm = OpenRouterChat(settings)
        log.info("LLM provider: %s at %s", settings.dreaming_model, settings.openrouter_base_url)
    if settings.embedder_is_offline:
        embedder = make_offline_embedder(settings.embedding_dim, settings.eros_offline_embedder)
        log.warning("embedding provider: offline %s, %d dims (no VOYAGE_API_KEY or "
                    "EROS_PROVIDERS=offline)", embedder.name, settings.embedding_dim)
    else:
        from eros.providers.embeddings import VoyageEmbedder

        embedder = VoyageEmbedder(settings)
        log.info("embedding provider: %s (%d dims)", settings.embedding_model,
                 settings.embedding_dim)
    return llm, embedder
