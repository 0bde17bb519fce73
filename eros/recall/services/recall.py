"""Recall: what do we know about this user that matters now? (docs/recall.md)

The chat product calls this at every turn. :func:`recall` embeds the turn's text
(``input_type="query"``) and :func:`recall_by_vector` does the rest:

1. a capped count tells how big the user's scope is (cheap however big the user);
2. a small scope is scanned exactly; a large one by its binary sketches (an index-only Hamming
   scan, re-ranked by exact cosine: its cost is the user's own rows, never other users'; for a
   user cut into cells by ``eros.cluster_memories``, only the cells nearest the query), or
   with RECALL_QUANTIZED_SCAN off through HNSW with pgvector's iterative index scan, where a
   scan that comes back short is re-run exactly — so "fewer than K" only ever means "fewer than
   K exist" (the original dreaming-lite recall, a filtered IVFFlat scan, could lose rows);
3. the candidates are ranked by the pure functions of :mod:`eros.recall.core.ranking`.

``decay`` and ``composite`` rank a *pool*: the N most similar memories in scope
(N = max(RECALL_CANDIDATES, 5 × K)) — recency and importance re-order relevant memories, they
never pull in an unrelated one because it is new or important. ``grouped`` on a large scope
groups the same pool: a category with K rows in the pool has its true top K there, and only
rarer categories are searched on their own. ``RecallResult.exact`` says
whether the answer is provably the formula's top-K over every row in scope (see
:func:`eros.recall.core.ranking.pool_is_exact`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine

from eros.core.names import (
    DEFAULT_SCOPE,
    FUSED,
    RECALL_STRATEGIES,
    SCOPES,
    RecallStrategy,
    Scope,
)
from eros.db.timeouts import set_statement_timeout
from eros.errors import RecallError
from eros.ops import metrics
from eros.providers.base import Embedder
from eros.recall.core.ranking import RankParams, Strategy
from eros.recall.db import reembed_sql
from eros.recall.services.read_route import ReadRoute
from eros.recall.services.recall_args import as_uuid, check_vector, scope_filter
from eros.recall.services.recall_fused import FusedFound, recalled, search_fused
from eros.recall.services.recall_models import (
    EmbedderFor,
    embedder_factory,
    interleave,
)
from eros.recall.services.recall_plan import (
    rank_pool,
)
from eros.recall.services.recall_result import (
    RecalledMemory,
    RecalledTurn,
    RecallResult,
    render_prompt,
)
from eros.recall.services.recall_search import Found, pool, search_grouped
from eros.settings import Settings, get_settings

__all__ = ["RecallResult", "RecalledMemory", "RecalledTurn", "recall", "recall_by_vector",
           "render_prompt"]


def recall(engine: Engine, embedder: Embedder, user_id: uuid.UUID | str, query: str, *,
           instance_id: uuid.UUID | str | None = None, scope: Scope = DEFAULT_SCOPE,
           strategy: RecallStrategy | None = None, k: int | None = None,
           include_replaced: bool = False, settings: Settings | None = None,
           embedder_for: EmbedderFor | None = None, sources: bool = True,
           include_sensitive: bool | None = None) -> RecallResult:
    """Recall the memories that matter for ``query`` (the user's turn).

    ``k`` is the per-category K for ``grouped`` and the global K otherwise; ``None`` takes
    RECALL_PER_CATEGORY_K / RECALL_K. ``strategy=None`` takes RECALL_STRATEGY. The query is
    embedded with the model the user's rows carry (``embedder_for(model)``; by default
    ``embedder`` for its own model and for rows from before models were recorded, the same
    provider built for another); a user on
    several models (mid re-embed) gets one search per model, interleaved by rank. Raises
    :class:`~eros.errors.RecallError` for invalid arguments and the provider's errors for a
    failed embedding call. Each memory carries its ``sources`` (provenance) unless
    ``sources=False``. ``include_sensitive=False`` leaves out memories with a
    special-category label (None: RECALL_INCLUDE_SENSITIVE).
    """
    cfg = settings or get_settings()
    if not query.strip():
        raise RecallError("the recall query is empty")
    uid = as_uuid(user_id, "user id")
    route = ReadRoute(engine, cfg)
    started = time.perf_counter()
    # NULL (rows from before 0012) is read as the caller's embedder's model
    models = sorted({m or embedder.name
                     for m in route.run(lambda conn: reembed_sql.user_models(conn, uid))})
    lookup_ms = (time.perf_counter() - started) * 1000
    pick = embedder_for or embedder_factory(cfg, embedder)
    kwargs: dict[str, Any] = {"instance_id": instance_id, "scope": scope, "strategy": strategy,
                              "k": k, "include_replaced": include_replaced, "settings": cfg,
                              "sources": sources, "include_sensitive": include_sensitive}
    if len(models) > 1:  # mid re-embed: one search per model, never one ranking of both
        results = [_recall_one(route, pick(m), query, uid, kwargs, model=m,
                               legacy=embedder.name) for m in models]
        result = _combine(results)
    else:
        result = _recall_one(route, pick(models[0]) if models else embedder, query, uid,
                             kwargs)
    result.timings["models"] = lookup_ms
    result.timings["total"] += lookup_ms
    return result


def _recall_one(route: ReadRoute, embedder: Embedder, query: str, user_id: uuid.UUID,
                kwargs: dict[str, Any], model: str | None = None,
                legacy: str | None = None) -> RecallResult:
    """Embed the query with ``embedder`` and search the rows of its model (all rows when
    ``model`` is None: the user has one model)."""
    started = time.perf_counter()
    vectors = embedder.embed([query], input_type="query").vectors
    embed_ms = (time.perf_counter() - started) * 1000
    if len(vectors) != 1:
        raise RecallError(f"the embedder returned {len(vectors)} vectors for one query")
    result = recall_by_vector(route.primary, user_id, vectors[0], embedding_model=model,
                              legacy_model=legacy, route=route, query_text=query, **kwargs)
    result.timings["embed"] = embed_ms
    result.timings["total"] += embed_ms
    return result


def _combine(results: list[RecallResult]) -> RecallResult:
    """Per-model answers interleaved by rank (services/recall_models.py); a ``fused`` answer
    interleaves its items (memories and turns) the same way."""
    first = results[0]
    timings: dict[str, float] = {}
    for r in results:
        for name, value in r.timings.items():
            timings[name] = timings.get(name, 0.0) + value
    if first.ranked is not None:
        items = interleave([r.items for r in results], k=first.k, per_category=False)
        return RecallResult([i for i in items if isinstance(i, RecalledMemory)],
                            first.strategy, first.scope, first.k, "models", False,
                            any(r.fallback for r in results), timings, results[-1].source,
                            [i for i in items if isinstance(i, RecalledTurn)], items,
                            first.budget)
    memories = interleave([r.memories for r in results], k=first.k,
                          per_category=first.strategy == "grouped")
    return RecallResult(memories, first.strategy, first.scope, first.k, "models",
                        all(r.exact for r in results), any(r.fallback for r in results),
                        timings, results[-1].source)


def recall_by_vector(engine: Engine, user_id: uuid.UUID | str, vector: Sequence[float], *,
                     instance_id: uuid.UUID | str | None = None, scope: Scope = DEFAULT_SCOPE,
                     strategy: RecallStrategy | None = None, k: int | None = None,
                     include_replaced: bool = False, settings: Settings | None = None,
                     now: datetime | None = None, embedding_model: str | None = None,
                     legacy_model: str | None = None, sources: bool = True,
                     route: ReadRoute | None = None,
                     include_sensitive: bool | None = None,
                     query_text: str | None = None) -> RecallResult:
    """:func:`recall` for a query vector computed elsewhere (benchmarks, batch callers).

    ``query_text`` (what the vector embeds) enables RECALL_LEXICAL's BM25 fusion over the
    pool (:mod:`eros.recall.core.lexical`; ``grouped`` reads RECALL_LEXICAL_DEPTH × K per category).

    ``now`` fixes the clock of the recency terms (tests); it defaults to the current time.
    ``sources``: each memory's provenance is read with the search (two more columns of the
    rows it fetches anyway, no extra statement); False leaves them out.
    ``embedding_model`` limits the search to that model's rows (NULL rows counting as
    ``legacy_model``'s), always by an exact scan: only a user mid re-embed needs it.
    ``engine`` is the primary; with DATABASE_REPLICA_URL set the search reads the replica
    while it answers and keeps up (services/read_route.py); ``route`` is the one a
    :func:`recall` call already chose. ``include_sensitive=False`` (None:
    RECALL_INCLUDE_SENSITIVE) leaves out memories with a special-category label, by an exact
    scan: the sketches and cells carry no label, and the default path (everything included)
    must not pay for a filter it does not apply.
    """
    cfg = settings or get_settings()
    route = route or ReadRoute(engine, cfg)
    sensitive = cfg.recall_include_sensitive if include_sensitive is None else include_sensitive
    if embedding_model is not None or not sensitive:  # sketches and cells carry neither
        cfg = cfg.model_copy(update={"recall_exact_scan_below": 2**62})
    started = time.perf_counter()
    chosen: RecallStrategy = strategy or cfg.recall_strategy
    if chosen not in RECALL_STRATEGIES:
        raise RecallError(f"unknown strategy {chosen!r}; expected one of "
                          f"{', '.join(RECALL_STRATEGIES)}")
    ranking: Strategy = "composite" if chosen == FUSED else chosen  # type: ignore[assignment]
    if scope not in SCOPES:
        raise RecallError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
    k_eff = k if k is not None else (
        cfg.recall_per_category_k if chosen == "grouped" else cfg.recall_k)
    if k_eff < 1:
        raise RecallError(f"k must be at least 1, got {k_eff}")
    query = check_vector(vector, cfg.embedding_dim)
    flt = replace(scope_filter(user_id, instance_id, scope, include_replaced),
                  embedding_model=embedding_model, legacy_model=legacy_model,
                  sources=sources, include_sensitive=sensitive)
    params = RankParams(now=now or datetime.now(UTC), decay_lambda=cfg.recall_decay_lambda,
                        decay_tau_days=cfg.recall_decay_tau_days,
                        composite_tau_days=cfg.recall_composite_tau_days,
                        default_importance=cfg.recall_default_importance,
                        composite_weight=cfg.recall_composite_weight)
    timings: dict[str, float] = {}
    n = max(cfg.recall_candidates, 5 * k_eff)
    lexical = bool(cfg.recall_lexical and query_text and query_text.strip())
    k_read = k_eff * cfg.recall_lexical_depth if lexical and chosen == "grouped" else k_eff

    def search(conn: Connection) -> Found | FusedFound:
        timings.clear()  # a step rerun on the primary times only the rerun
        if cfg.recall_statement_timeout_ms:  # recall's own budget, not the worker's
            set_statement_timeout(conn, cfg.recall_statement_timeout_ms)
        if chosen == FUSED:
            return search_fused(conn, flt, query, n, k_eff, cfg, timings, params, query_text)
        if chosen == "grouped":
            return search_grouped(conn, flt, query, k_read, n, cfg, timings)
        return pool(conn, flt, query, n, cfg, timings)

    answer = route.run(search)
    if isinstance(answer, FusedFound):
        timings["total"] = (time.perf_counter() - started) * 1000
        metrics.record_recall(answer.found.plan, chosen, timings["total"] / 1000)
        items = recalled(answer.items)
        return RecallResult([i for i in items if isinstance(i, RecalledMemory)], chosen,
                            flt.effective_scope, k_eff, answer.found.plan, False,
                            answer.found.fallback, timings, route.source,
                            [i for i in items if isinstance(i, RecalledTurn)], items,
                            cfg.recall_token_budget)
    found = answer
    t = time.perf_counter()
    ranked, exact = rank_pool(ranking, found.candidates, k_eff, k_read, params,
                              query_text if lexical else None, exact=found.exact,
                              complete=found.complete)
    timings["rank"] = (time.perf_counter() - t) * 1000
    timings["total"] = (time.perf_counter() - started) * 1000
    metrics.record_recall(found.plan, chosen, timings["total"] / 1000)
    memories = [RecalledMemory(uuid.UUID(s.candidate.id), s.candidate.content,
                               s.candidate.category, s.candidate.importance,
                               s.candidate.created_at, s.candidate.layer, s.similarity, s.score,
                               s.candidate.sources, s.candidate.source_fallback,
                               s.candidate.sensitivity)
                for s in ranked]
    return RecallResult(memories, chosen, flt.effective_scope, k_eff, found.plan, exact,
                        found.fallback, timings, route.source)
