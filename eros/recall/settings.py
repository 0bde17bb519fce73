"""Recall's settings (docs/recall.md): a section of :class:`eros.settings.Settings`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from eros.core.names import DEFAULT_LABELS, FUSED, FusionCalibration, LabelSet, RecallStrategy


class RecallSettings(BaseSettings):
    """RECALL_* variables. Field ``foo_bar`` is read from the variable ``FOO_BAR``."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    # --- recall (docs/recall.md) -----------------------------------------------------------
    #: ``fused`` (the default: it beats the raw-turn baseline on
    #: LoCoMo and keeps ``grouped``'s implicit recall, bench/RESULTS.md) ranks memories and the
    #: user's own turns together by provenance (eros/recall/core/fusion.py); ``grouped`` is the
    #: original dreaming-lite recall (K per category); ``decay`` and ``composite`` rank
    #: memories alone.
    recall_strategy: RecallStrategy = FUSED
    #: global top-K of ``decay`` and ``composite`` (10 = the most ``grouped`` can return).
    recall_k: int = Field(default=10, ge=1, le=100)
    #: K within each category for ``grouped`` (2, the original dreaming-lite recall's).
    recall_per_category_k: int = Field(default=2, ge=1, le=50)
    #: ``decay``: weight λ of the recency bonus ``λ · exp(−age/τ)``.
    recall_decay_lambda: float = Field(default=0.2, ge=0, le=10)
    #: ``decay``: τ in days.
    recall_decay_tau_days: float = Field(default=21.0, gt=0)
    #: ``composite``: τ in days of its recency term.
    recall_composite_tau_days: float = Field(default=90.0, gt=0)
    #: ``composite``: weight w of its bonus ``w · exp(−age/τ) · importance``.
    recall_composite_weight: float = Field(default=0.1, ge=0, le=10)
    #: ``composite``: the importance of rows that have none (written before it was emitted).
    recall_default_importance: float = Field(default=0.5, ge=0, le=1)
    #: the rendered prompt section ends each note with the day it is about (eros.recall task)
    recall_render_dates: bool = True
    #: the lexical signal (eros/recall/core/lexical.py): the pool re-ordered by reciprocal-rank
    #: fusion with BM25 over the query's words, when the query's text is known.
    recall_lexical: bool = False
    #: ``grouped`` with the lexical signal reads this many × K rows per category to re-order.
    recall_lexical_depth: int = Field(default=5, ge=1, le=50)
    #: the pool: strategies rank the N most similar memories in scope, N = max(this, 5 × K).
    recall_candidates: int = Field(default=50, ge=1, le=1000)
    #: a scope with fewer rows than this is scanned exactly; larger ones by the quantised scan
    #: (or, without it, HNSW with iterative index scans unless too small a share of the table).
    recall_exact_scan_below: int = Field(default=2000, ge=0)
    #: large scopes: a Hamming scan of the binary sketches (index-only), re-ranked by exact
    #: cosine; off = HNSW with iterative index scans (docs/recall.md).
    recall_quantized_scan: bool = True
    #: recall's default for ``include_sensitive``: true recalls memories of every
    #: special category (nothing changes for a product that does not opt in); false leaves
    #: out every memory with a ``sensitivity`` label unless a call asks for them.
    recall_include_sensitive: bool = True
    #: the quantised scan re-ranks max(N, 10) × this many sketches to return N rows.
    recall_quantized_oversample: int = Field(default=10, ge=1, le=100)
    #: ``hnsw.ef_search`` of the HNSW path (raised to the pool size when that is larger).
    recall_hnsw_ef_search: int = Field(default=100, ge=1, le=1000)
    #: ``hnsw.max_scan_tuples``: how far an iterative scan may go before giving up.
    recall_hnsw_max_scan_tuples: int = Field(default=20000, ge=1)
    #: ``fused``: the most tokens its answer may take in the prompt (the rendered section, as
    #: recall's estimate counts them); K (RECALL_K) still caps how many items it holds.
    recall_token_budget: int = Field(default=1000, ge=100, le=100_000)
    #: ``fused``: the turn pool, the N user turns nearest the query it ranks with memories.
    recall_turn_candidates: int = Field(default=50, ge=1, le=1000)
    #: ``fused``: subtracted from a turn's score, so at equal similarity a memory wins and a
    #: turn takes a memory's place only when clearly nearer the query (``standing``, ``z``: in
    #: standard deviations; 0 with ``standing``: ties already go to the memory).
    recall_fusion_turn_offset: float = Field(default=0.0, ge=-1, le=5)
    #: ``fused``: ``standing`` (the default) scores each kind's r-th item by how far its kind's
    #: r-th best similarity stands above the kind's own pool; ``rank`` by rank alone;
    #: ``similarity`` compares the two kinds' scores as they are; ``z`` standardises each
    #: item's score over its kind's pool (RECALL_FUSION_TURN_OFFSET then in std devs).
    recall_fusion_calibration: FusionCalibration = "standing"
    #: ``fused`` with ``rank`` calibration: a memory at rank r scores this / (60 + r), a turn
    #: 1 / (60 + r) — above 1, memories hold more of the top K.
    recall_fusion_memory_weight: float = Field(default=1.0, gt=0, le=10)
    #: ``fused``: subtracted from the score of a turn cited only by superseded memories.
    recall_fusion_stale_penalty: float = Field(default=0.2, ge=0, le=2)
    #: ``fused``: the recency term of both kinds, ``w · exp(−age / τ) · importance`` (a turn's
    #: importance is RECALL_DEFAULT_IMPORTANCE), as composite's but with its own w and τ.
    #: 0 by default: a recency term buried the old confidences implicit recall is about
    #: (bench/RESULTS.md, the fused strategy's tuning).
    recall_fusion_recency_weight: float = Field(default=0.0, ge=0, le=10)
    recall_fusion_tau_days: float = Field(default=21.0, gt=0)
    #: ``fused``: ``w · importance`` added to a memory's score, whatever its age (a turn's
    #: importance is RECALL_DEFAULT_IMPORTANCE): the extractor's judgment of what matters
    #: orders near-equal memories, without the recency that buried old confidences; 0 = off
    #: (the default: 0.05 gained the implicit development sets 1–2 remarks and cost LoCoMo's
    #: observation replay 0.7 points of recall@10, bench/RESULTS.md).
    recall_fusion_importance_weight: float = Field(default=0.0, ge=0, le=10)
    #: ``fused``: weight of the query's words (BM25 over memories and turns, scaled to [0, 1])
    #: added to every score; 0 = off.
    recall_fusion_lexical_weight: float = Field(default=1.0, ge=0, le=1)
    #: ``fused`` (``standing``, ``rank``): a turn takes a BM25 rank only when it says at least
    #: this many of the query's distinct words (all of them, for a shorter query); 1 = any.
    recall_fusion_lexical_min_terms: int = Field(default=2, ge=1, le=10)
    #: ``fused`` (``standing``): the standard deviations the turns gain when a turn of the
    #: pool says at least half of the query's distinct words (and at least
    #: RECALL_FUSION_LEXICAL_MIN_TERMS of them): the user's own words answer it; 0 = off.
    recall_fusion_lexical_lead: float = Field(default=1.0, ge=0, le=5)
    #: ``fused``: the turns no BM25 rank reaches (fewer than RECALL_FUSION_LEXICAL_MIN_TERMS
    #: of the query's words) share the lexical ranking's remaining places (their mid-rank) in
    #: the reciprocal-rank fusion, instead of having none; off = any lexically ranked turn
    #: goes before every other.
    recall_fusion_lexical_ties: bool = True
    #: ``fused``: a memory that only restates turns the turn search passed over (it cites
    #: them, none is in the turn pool, every word of it is theirs) is left out of the ranking.
    recall_fusion_skip_restatements: bool = True
    #: ``fused``: within the first this many ranked items, a newer item on the same specific
    #: subject (a rare word both say) goes before the older one; 0 = off.
    recall_fusion_newer_first_depth: int = Field(default=20, ge=0, le=1000)
    #: ``fused``: a turn a shorter memory cites is returned as that memory (the turn its
    #: quote), in the turn's place; off = the turn keeps its place.
    recall_fusion_memory_stands_in: bool = True
    #: ``fused``: past the first this many items of its list, the memories left go before the
    #: turns left when the memory pool recall read renders within
    #: RECALL_FUSION_MEMORY_TAIL_TOKENS (a small user's memories, given whole before more
    #: turns); 0 = off. Only a list longer than this (K above it, or the eval's long list)
    #: changes: the first this many items are the ranking's.
    recall_fusion_memory_tail_after: int = Field(default=25, ge=0, le=1000)
    recall_fusion_memory_tail_tokens: int = Field(default=1000, ge=0, le=100_000)
    #: ``fused``: when the query is a remark, not a question (no question mark in any script,
    #: no interrogative opening) and no turn of the pool says it in the user's own words,
    #: RECALL_FUSION_MEMORY_TAIL_AFTER is this instead: recall runs on the user's latest
    #: message, most often a remark, which asks what is known about the user (a small memory
    #: pool, whole after the ranking's first few items) more than what was said; 0 = off.
    recall_fusion_remark_tail_after: int = Field(default=3, ge=0, le=1000)
    #: ``fused``: on such a remark, only the *turns* that lead the list (ranked above every
    #: memory) keep their places before the memory tail, at most
    #: RECALL_FUSION_REMARK_TAIL_AFTER of them: a turn ranked below a memory does not stand
    #: out above what is known, and its tokens would push a small pool past a small budget;
    #: off = the first RECALL_FUSION_REMARK_TAIL_AFTER items whatever their kind.
    recall_fusion_remark_lead_turns: bool = True
    #: ``fused``: on such a remark, the memories that render within this many tokens
    #: together (in their own order, the best first) go right after the turns that lead the
    #: list, whatever the memory pool's size — the first window of a prompt holds what a
    #: memory-only answer would hold there, less the leading turns; 0 = off. 500 (half the
    #: default budget): a pool past the small-pool tail keeps its best memories where the
    #: tail would have put them, so what a remark's first 500 tokens hold does not fall off a
    #: cliff when a user's pool passes RECALL_FUSION_MEMORY_TAIL_TOKENS; 1,000 costs remarks
    #: about a past event more within 1,000 tokens (bench/RESULTS.md, tenth round).
    recall_fusion_remark_memory_tokens: int = Field(default=500, ge=0, le=100_000)
    #: ``fused``: on such a remark, the turns that lead the list keep their places only while
    #: they render within this many tokens together (20: one short line; a chatty turn of
    #: 25–40 tokens goes after what is known); 0 = no cap (at most
    #: RECALL_FUSION_REMARK_TAIL_AFTER of them). Off by default: 20 gains the implicit
    #: development sets a question each within 200–400 tokens, and costs remarks about a past
    #: event on a small pool 6.6 points of recall@10 (bench/RESULTS.md, ninth round).
    recall_fusion_remark_lead_tokens: int = Field(default=0, ge=0, le=100_000)
    #: labels of the prompt the Celery task ``eros.recall`` renders (``zh`` or ``en``).
    recall_labels: LabelSet = DEFAULT_LABELS
    #: users with at least this many memories are cut into cells by ``eros.cluster_memories``
    #: (beat), so their recall reads only the cells nearest the query (docs/recall.md).
    recall_cell_min_rows: int = Field(default=5000, ge=1)
    #: the share of a clustered user's cells a recall reads (the nearest first); 1 = read all
    #: (the plain quantised scan), a smaller share is faster and may miss a far-flung match.
    recall_cell_probe_share: float = Field(default=0.2, gt=0, le=1)
    #: ``fused``: the share of a clustered user's memory cells whose turns the turn search reads
    #: (the nearest first, plus the turns in no cell; 0029); 1 = read every turn. Larger than
    #: the memories' share: the cells are cut on memories, and turns fall farther from their
    #: centroids (on LoCoMo's turns 0.2 kept 94.8% of the exact top 50, 0.4 kept 98.1%).
    recall_turn_probe_share: float = Field(default=0.4, gt=0, le=1)
    #: seconds between two beat runs of ``eros.cluster_memories`` (users due for clustering).
    recall_cell_interval_secs: int = Field(default=3600, ge=1)
