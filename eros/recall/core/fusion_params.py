"""The fusion's weights, apart from the fusion itself (:mod:`eros.recall.core.fusion`).

One frozen dataclass: the RECALL_FUSION_* settings as ``recall_fused.fusion_params`` reads
them, and the recency terms the fusion shares with ``composite``. It lives in its own module
so the fusion's rules read without forty lines of knobs in front of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from eros.core.names import FusionCalibration


@dataclass(frozen=True)
class FusionParams:
    """The fusion's weights (RECALL_FUSION_* settings) and the recency terms it shares with
    ``composite``."""

    now: datetime
    #: subtracted from a turn's score: at equal similarity a memory wins
    turn_offset: float = 0.03
    #: subtracted from a turn cited only by superseded memories
    stale_penalty: float = 0.2
    composite_tau_days: float = 90.0
    composite_weight: float = 0.1
    default_importance: float = 0.5
    #: ``w · importance`` added to every item's score whatever its age (a turn: the default
    #: importance), so near-equal memories keep what matters first; 0 = off
    importance_weight: float = 0.0
    #: BM25 of the query's words over the pool (memories and turns together, IDF over both),
    #: scaled to [0, 1] by the pool's best, times this, added to every item's score
    lexical_weight: float = 0.0
    #: ``similarity``: scores compared as they are; ``z``: each kind's scores standardised
    #: over its own pool first (``turn_offset`` is then in standard deviations)
    calibration: FusionCalibration = "similarity"
    #: ``rank``: a memory at rank r scores ``memory_weight / (c + r)``, a turn ``1 / (c + r)``
    memory_weight: float = 1.0
    rank_c: int = 60
    #: ``standing``: how many of each kind's nearest items its spread is measured over
    standing_depth: int = 50
    #: within the first this many ranked items, the newer item on a shared specific subject
    #: goes first (:mod:`eros.recall.core.fusion_subject`); 0 = off
    newer_first_depth: int = 0
    #: a turn that a shorter memory cites is returned as that memory, in the turn's place
    memory_stands_in: bool = False
    #: a turn has a lexical rank (``lexical_weight``, ``standing`` and ``rank``) only when it
    #: says at least this many of the query's distinct words (all of them, for a shorter query)
    lexical_min_terms: int = 1
    #: ``standing``: the standard deviations the turns gain when a turn of the pool says the
    #: query in its own words (:func:`said_in_words`); 0 = off
    lexical_lead: float = 0.0
    #: the turns without a lexical rank share the lexical ranking's remaining places (their
    #: mid-rank) in the reciprocal-rank fusion, instead of having none
    lexical_ties: bool = False
    #: a memory that only restates turns the turn search passed over is left out
    #: (:func:`restates_unfound`)
    drop_unfound_restatements: bool = False
    #: past the first this many items, the memories go before the turns when the memory pool
    #: renders within ``memory_tail_tokens`` (:func:`~eros.recall.core.fusion_budget.memory_tail`);
    #: 0 = off
    memory_tail_after: int = 0
    memory_tail_tokens: int = 1000
    #: ``memory_tail_after`` on a remark no turn echoes
    #: (:func:`~eros.recall.core.fusion_intent.for_intent`); 0 = off
    remark_tail_after: int = 0
    #: on such a remark, the head is only the turns that lead the list (at most
    #: ``remark_tail_after``): the memory tail starts at the first memory
    remark_lead_turns: bool = False
    #: set by :func:`~eros.recall.core.fusion_intent.for_intent`: the tail starts at the
    #: first memory of the list (at the latest after ``memory_tail_after`` items)
    memory_tail_at_memory: bool = False
    #: on such a remark, the memories that render within this many tokens (in their own
    #: order) go right after the head whatever the pool's size
    #: (:func:`~eros.recall.core.fusion_budget.memory_window`); 0 = off
    remark_memory_tokens: int = 0
    #: on such a remark, the turns that lead the list keep their places only while they
    #: render within this many tokens together; 0 = no cap
    remark_lead_tokens: int = 0
    #: ``w · ln(tokens)`` taken from every item's score after the calibration (standard
    #: deviations under ``standing``): the list ordered by value per token
    #: (:func:`~eros.recall.core.fusion_budget.per_token`); with ``token_turns_only`` only a
    #: turn longer than the memories' median pays. 0 = off, and no setting turns it on: it
    #: measured worse on the development sets and LoCoMo (bench/RESULTS.md, twelfth fused
    #: round); kept for ``bench.fusion_capture --variant``
    token_weight: float = 0.0
    token_turns_only: bool = False
    #: set by :func:`~eros.recall.core.fusion_intent.for_intent` from the two above
    memory_window_tokens: int = 0
    lead_tokens: int = 0
