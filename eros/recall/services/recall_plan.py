"""How recall searches a scope of a given size: exactly, by the quantised scan, or by HNSW —
and the sizes each plan reads (RECALL_* settings)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from eros.recall.core.lexical import rerank
from eros.recall.core.ranking import Candidate, RankParams, Scored, Strategy, pool_is_exact, rank
from eros.recall.db.recall_hnsw_sql import HnswParams
from eros.settings import Settings

Search = Literal["exact", "quantized", "hnsw"]


def hnsw_params(cfg: Settings) -> HnswParams:
    return HnswParams(ef_search=cfg.recall_hnsw_ef_search,
                      max_scan_tuples=cfg.recall_hnsw_max_scan_tuples)


def choose_search(rows: int, need: int, table_rows: float, cfg: Settings) -> Search:
    """How to find ``need`` rows of a scope holding ``rows``.

    Exactly when that is cheap (fewer than RECALL_EXACT_SCAN_BELOW rows, or at most ``need``).
    Otherwise by the quantised scan (RECALL_QUANTIZED_SCAN), whose cost is linear in the
    scope's rows at a tenth of the exact scan's and does not depend on other users. Without it,
    by HNSW, unless an iterative scan is expected to give up: to collect ``need`` rows of a
    scope holding a share ``rows / table_rows`` of the index it visits about
    ``need · table_rows / rows`` tuples, and it stops at RECALL_HNSW_MAX_SCAN_TUPLES.
    """
    if rows < cfg.recall_exact_scan_below or rows <= need:
        return "exact"
    if cfg.recall_quantized_scan:
        return "quantized"
    if rows * cfg.recall_hnsw_max_scan_tuples < need * table_rows:
        return "exact"
    return "hnsw"


def count_kwargs(cfg: Settings, need: int) -> dict[str, Any]:
    return {"exact_below": cfg.recall_exact_scan_below, "need": need,
            "max_scan_tuples": None if cfg.recall_quantized_scan
            else cfg.recall_hnsw_max_scan_tuples}


def sketches(need: int, cfg: Settings) -> int:
    """Rows a quantised scan re-ranks exactly to return ``need`` (at least 10 × the
    oversampling: a per-category K of 2 still gets a fair sample)."""
    return max(need, 10) * cfg.recall_quantized_oversample


def rank_pool(strategy: Strategy, pool: Sequence[Candidate], k: int, k_read: int,
              params: RankParams, query_text: str | None, *, exact: bool,
              complete: bool) -> tuple[list[Scored], bool]:
    """The ranked answer and whether it is provably the formula's top-``k``. With
    ``query_text`` (RECALL_LEXICAL), the whole pool in the strategy's order is fused with BM25
    and then cut (``grouped``: ``k`` of the ``k_read`` read per category); that answer is exact
    only when the pool is the whole scope."""
    if query_text:
        ranked = rerank(rank(strategy, pool, k=len(pool), per_category_k=k_read, params=params),
                        query_text, k, per_category=strategy == "grouped")
        return ranked, exact and complete
    ranked = rank(strategy, pool, k=k, per_category_k=k, params=params)
    return ranked, exact and pool_is_exact(strategy, pool, ranked, k, pool_complete=complete,
                                           params=params)
