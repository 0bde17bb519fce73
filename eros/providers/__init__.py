"""Outside services behind small protocols; SDK errors are translated here into ours."""

from __future__ import annotations

import logging

from eros.core.text import mask_url
from eros.providers.base import ChatCompleter, Completion, Embedder, Embeddings
from eros.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["ChatCompleter", "Completion", "Embedder", "Embeddings", "make_embedder",
           "make_providers"]


def make_providers(settings: Settings) -> tuple[ChatCompleter, Embedder]:
    """Live providers where keys are configured; the offline ones otherwise (announced)."""
    from eros.providers.offline import OfflineChat

    llm: ChatCompleter
    embedder: Embedder
    if settings.llm_is_offline:
        llm = OfflineChat()
        log.warning("LLM provider: offline heuristic extractor (no OPENROUTER_API_KEY or "
                    "EROS_PROVIDERS=offline) — for trying the system and load tests only")
    else:
        from eros.providers.llm import OpenRouterChat

        llm = OpenRouterChat(settings)
        log.info("LLM provider: %s at %s", settings.dreaming_model,
                 mask_url(settings.openrouter_base_url))
    embedder = make_embedder(settings)
    if embedder.offline:
        log.warning("embedding provider: offline %s, %d dims (no VOYAGE_API_KEY or "
                    "EROS_PROVIDERS=offline)", embedder.name, settings.embedding_dim)
    else:
        log.info("embedding provider: %s (%d dims) at %s", settings.embedding_model,
                 settings.embedding_dim, mask_url(settings.voyage_base_url or "default"))
    return llm, embedder


def make_embedder(settings: Settings, *, model: str | None = None,
                  dim: int | None = None) -> Embedder:
    """The configured embedder, or the same provider with another model or size (recall of
    rows still on an older model, ``eros reembed --model --dim``). Offline the model is the one
    EROS_OFFLINE_EMBEDDER selects (e5 when installed, else the hash embedder)."""
    from eros.providers.offline import make_offline_embedder

    size = dim or settings.embedding_dim
    if settings.embedder_is_offline:
        return make_offline_embedder(size, settings.eros_offline_embedder)
    from eros.providers.embeddings import VoyageEmbedder

    update: dict[str, object] = {"embedding_dim": size}
    if model:
        update["embedding_model"] = model
    return VoyageEmbedder(settings.model_copy(update=update))
