"""What ``eros eval`` builds from its options — the embedder (behind its cache) and the judge —
in one place, so that a worker process (:mod:`.parallel`: classify, ask) builds the same ones
the command does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sqlalchemy import Engine

from eros.evaluation.services.judges import DEFAULT_FLOORS, EmbeddingJudge, Judge, LLMJudge
from eros.providers.base import ChatCompleter, Embedder

if TYPE_CHECKING:
    from eros.settings import Settings

JudgeName = Literal["embedding", "llm"]


@dataclass(frozen=True)
class WorkerSetup:
    """How a worker process rebuilds what the command built (picklable): the scratch
    database, the embedding cache's file (None: no cache), the judge and its options."""

    database_url: str
    cache: Path | None = None
    judge: JudgeName = "embedding"
    floor: float | None = None
    answers: bool = False


def cached(embedder: Embedder, cache: Path | None) -> Embedder:
    """``embedder`` behind the embedding cache in ``cache`` (None: as it is)."""
    if cache is None:
        return embedder
    from eros.evaluation.db.eval_cache import VectorCache
    from eros.evaluation.services.cached_embedder import CachedEmbedder

    return CachedEmbedder(embedder, VectorCache(cache))


def make_judge(name: JudgeName, llm: ChatCompleter, embedder: Embedder, floor: float | None,
               answers: bool) -> Judge:
    """The embedding judge (``floor``: its minimum similarity, default per embedder) or the
    LLM judge (``answers``: also answer and grade)."""
    if name == "llm":
        return LLMJudge(llm, answers=answers)
    return EmbeddingJudge(embedder, floor if floor is not None
                          else DEFAULT_FLOORS.get(embedder.name, 0.5))


@dataclass(frozen=True)
class Built:
    """A worker's own engine on the scratch database, providers and judge."""

    engine: Engine
    llm: ChatCompleter
    embedder: Embedder
    judge: Judge


def build(setup: WorkerSetup, settings: Settings) -> Built:
    """What a worker needs, built as the command builds it."""
    from eros.db.engine import make_engine
    from eros.providers import make_providers

    llm, embedder = make_providers(settings)
    embedder = cached(embedder, setup.cache)
    return Built(make_engine(setup.database_url, pool_size=2), llm, embedder,
                 make_judge(setup.judge, llm, embedder, setup.floor, setup.answers))
