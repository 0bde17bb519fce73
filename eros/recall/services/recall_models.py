"""Recall across embedding models: which models a user's rows carry, the embedder of each,
and how per-model answers are combined without ranking two models' vectors together.

Cosine similarities of two models are not on one scale (and their vectors are not in one
space), so each model's rows are searched with a query embedded by that model and ranked on
their own; the ranked lists are then interleaved by rank position — first of each, second of
each, … — never by comparing their scores. A user is on several models only while ``eros
reembed`` runs; otherwise recall is one search, as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

from sqlalchemy import Engine

from eros.providers import make_embedder
from eros.providers.base import Embedder
from eros.providers.offline.hashing import HASH_MODEL
from eros.recall.db import reembed_sql
from eros.settings import Settings

EmbedderFor = Callable[[str], Embedder]


R = TypeVar("R")


def configured_model(settings: Settings) -> str:
    """The model of the configured embedder: what rows from before 0012 (NULL) were made by."""
    return HASH_MODEL if settings.embedder_is_offline else settings.embedding_model


def user_model_names(engine: Engine, user_id: uuid.UUID, *, legacy: str) -> list[str]:
    """The models the user's rows carry, sorted; NULL (rows from before 0012) is read as
    ``legacy``, the model of the caller's embedder (the configured one)."""
    with engine.connect() as conn:
        models = reembed_sql.user_models(conn, user_id)
    return sorted({m or legacy for m in models})


def embedder_factory(settings: Settings, default: Embedder) -> EmbedderFor:
    """``model → Embedder``: the caller's embedder for its own model, otherwise the same
    provider built for that model (cached for the process)."""
    def embedder_for(model: str) -> Embedder:
        if model == default.name:
            return default
        key = (id(settings), model)
        if key not in _CACHE:
            _CACHE[key] = make_embedder(settings, model=model)
        return _CACHE[key]
    return embedder_for


_CACHE: dict[tuple[int, str], Embedder] = {}


def _category(item: object) -> str:
    """A memory's category (a ``fused`` turn has none)."""
    return str(getattr(item, "category", ""))


def interleave(lists: Sequence[Sequence[R]], *, k: int, per_category: bool) -> list[R]:
    """Round-robin by rank position over per-model ranked lists, at most ``k`` (per category
    when ``per_category``, as ``grouped`` answers), keeping each list's own order."""
    if per_category:
        categories: list[str] = []
        for ranked in lists:
            categories += [c for c in (_category(m) for m in ranked) if c not in categories]
        out: list[R] = []
        for category in categories:
            out += interleave([[m for m in ranked if _category(m) == category]
                               for ranked in lists], k=k, per_category=False)
        return out
    merged: list[R] = []
    depth = max((len(ranked) for ranked in lists), default=0)
    for position in range(depth):
        for ranked in lists:
            if position < len(ranked) and len(merged) < k:
                merged.append(ranked[position])
    return merged

