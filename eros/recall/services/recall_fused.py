"""The ``fused`` strategy's search: the memory pool and the turn pool read on one connection,
then fused by provenance (:mod:`eros.recall.core.fusion`; docs/recall.md, "Fused").

Reads, all on the connection recall chose (primary or replica): the memory pool exactly as
``composite`` reads it (:func:`eros.recall.services.recall_search.pool`), the RECALL_TURN_CANDIDATES
user turns nearest the query (``engine.memory_turns``), which of those turns only superseded
memories cite, and the turns the best memories cite that the turn search did not find (their
quotes). Ranking and fusing are pure.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Connection

from eros.core.text import estimate_tokens
from eros.recall.core.fusion import (
    FusedItem,
    FusionParams,
    TurnCandidate,
    carry_labels,
    fuse,
)
from eros.recall.core.fusion_words import cited
from eros.recall.core.ranking import RankParams, rank
from eros.recall.core.render import bullet, get_labels
from eros.recall.core.render_fused import turn_line, within_budget
from eros.recall.db import fusion_sql, turns_sql
from eros.recall.db.recall_sql import ScopeFilter
from eros.recall.services.recall_result import RecalledMemory, RecalledTurn
from eros.recall.services.recall_search import Found, pool
from eros.settings import Settings


@dataclass(frozen=True)
class FusedFound:
    """The memory pool as found (its plan and exactness) and the fused, budgeted answer."""

    found: Found
    items: list[FusedItem]


def fusion_params(cfg: Settings, now: datetime) -> FusionParams:
    return FusionParams(now=now, turn_offset=cfg.recall_fusion_turn_offset,
                        stale_penalty=cfg.recall_fusion_stale_penalty,
                        composite_tau_days=cfg.recall_fusion_tau_days,
                        composite_weight=cfg.recall_fusion_recency_weight,
                        default_importance=cfg.recall_default_importance,
                        importance_weight=cfg.recall_fusion_importance_weight,
                        lexical_weight=cfg.recall_fusion_lexical_weight,
                        calibration=cfg.recall_fusion_calibration,
                        memory_weight=cfg.recall_fusion_memory_weight,
                        standing_depth=cfg.recall_turn_candidates,
                        newer_first_depth=cfg.recall_fusion_newer_first_depth,
                        memory_stands_in=cfg.recall_fusion_memory_stands_in,
                        lexical_min_terms=cfg.recall_fusion_lexical_min_terms,
                        lexical_lead=cfg.recall_fusion_lexical_lead,
                        lexical_ties=cfg.recall_fusion_lexical_ties,
                        drop_unfound_restatements=cfg.recall_fusion_skip_restatements,
                        memory_tail_after=cfg.recall_fusion_memory_tail_after,
                        memory_tail_tokens=cfg.recall_fusion_memory_tail_tokens,
                        remark_tail_after=cfg.recall_fusion_remark_tail_after,
                        remark_lead_turns=cfg.recall_fusion_remark_lead_turns,
                        remark_memory_tokens=cfg.recall_fusion_remark_memory_tokens,
                        remark_lead_tokens=cfg.recall_fusion_remark_lead_tokens)


def item_tokens(cfg: Settings) -> Callable[[FusedItem], int]:
    """An item's rendered line, as recall's estimate counts it (RECALL_LABELS, dated)."""
    labels = get_labels(cfg.recall_labels)

    def cost(item: FusedItem) -> int:
        if item.memory is not None:
            line = bullet(_as_memory(item), labels, dated=cfg.recall_render_dates)
        else:
            line = turn_line(_as_turn(item.turn), labels)  # type: ignore[arg-type]
        return estimate_tokens(line) + 1  # the newline
    return cost


def search_fused(conn: Connection, flt: ScopeFilter, query: list[float], n: int, k: int,
                 cfg: Settings, timings: dict[str, float], rank_params: RankParams,
                 query_text: str | None) -> FusedFound:
    """The fused top ``k`` within RECALL_TOKEN_BUDGET."""
    found = pool(conn, flt, query, n, cfg, timings)
    own = replace(rank_params, composite_weight=cfg.recall_fusion_recency_weight,
                  composite_tau_days=cfg.recall_fusion_tau_days)
    ranked = rank("composite", found.candidates, k=len(found.candidates),
                  per_category_k=len(found.candidates), params=own)
    t = time.perf_counter()
    # a turn belongs to one conversation: the persona's (no profile layer of turns; with no
    # persona, the conversations without one)
    instance = None if flt.effective_scope == "profile" else flt.instance_id
    # the user's turns sit in their memory cells when the memory side probed cells (0029);
    # otherwise every turn is read (a light user's: no probe that could come back short)
    probe_share = cfg.recall_turn_probe_share if found.plan == "cells" else 1.0
    near = turns_sql.nearest_turns(conn, flt.user_id, instance, query,
                                   cfg.recall_turn_candidates, flt.include_sensitive,
                                   embedding_model=flt.embedding_model,
                                   probe_share=probe_share)
    turns = [TurnCandidate(r.seq, str(r.session_id), r.said_at, r.content, r.distance,
                           r.sensitivity) for r in near]
    found_seqs = {x.seq for x in turns}
    wanted = {s for m in ranked[:k] for s in cited(m)} - found_seqs
    # what the memories citing them say: stale (only replaced ones cite it) and the label a
    # turn inherits from a labelled memory citing it (left out with include_sensitive=false)
    prov = fusion_sql.turn_provenance(conn, flt.user_id, found_seqs | wanted)
    turns = carry_labels(turns, prov.labels, include_sensitive=flt.include_sensitive)
    lifted = carry_labels(fusion_sql.turns_by_seq(conn, flt.user_id, wanted,
                                                  include_sensitive=flt.include_sensitive),
                          prov.labels, include_sensitive=flt.include_sensitive)
    stale = prov.stale
    timings["turns"] = (time.perf_counter() - t) * 1000
    params = fusion_params(cfg, rank_params.now)
    cost = item_tokens(cfg)
    items = fuse(ranked, turns, k=len(ranked) + len(turns), params=params, stale=stale,
                 lifted=lifted, query_text=query_text, cost=cost)
    return FusedFound(found, within_budget(items, cfg.recall_token_budget, cost, limit=k))


def _as_turn(t: TurnCandidate, score: float | None = None) -> RecalledTurn:
    sim = 1.0 - t.distance
    return RecalledTurn(t.seq, uuid.UUID(t.session_id), t.said_at, t.content, sim,
                        sim if score is None else score, t.sensitivity)


def _as_memory(item: FusedItem) -> RecalledMemory:
    assert item.memory is not None
    s = item.memory
    c = s.candidate
    return RecalledMemory(uuid.UUID(c.id), c.content, c.category, c.importance, c.created_at,
                          c.layer, s.similarity, item.score, c.sources, c.source_fallback,
                          c.sensitivity, tuple(_as_turn(q) for q in item.quotes))


def recalled(items: list[FusedItem]) -> list[RecalledMemory | RecalledTurn]:
    """The fused items as the result's memories and turns, in rank order."""
    return [_as_memory(i) if i.memory is not None
            else _as_turn(i.turn, i.score) for i in items]  # type: ignore[arg-type]
