"""Fusion by provenance, pure: memories and the user's own turns ranked together.

The ``fused`` recall strategy reads two pools — the memories nearest the query (ranked by
``composite``) and the user turns nearest the query (``engine.memory_turns``) — and makes one
list of them here. Memories are what dreaming understood; turns are what the user actually
said, including what no memory kept. Provenance (``companion_memories.source_seqs``) ties the
two together, and decides what the list holds:

- **one score for both kinds**: a memory keeps its strategy's score (``sim + w · recency ·
  importance``); a turn gets the same formula with the default importance, minus
  ``turn_offset`` — a turn is a noisier key than the fact written from it (a long, chatty
  sentence about three things), so at equal similarity the memory wins, and a turn takes a
  memory's place only when it is *clearly* nearer the query. This is the calibration that
  keeps turns from crowding memories out;
- **not twice**: a turn that a memory ranked above it cites is not returned again — it rides
  with that memory as its *quote* (:attr:`FusedItem.quotes`); a memory whose every source is a
  turn already returned above it adds nothing and is left out;
- **lift**: a turn a returned memory cites is found through that memory (facts as keys for
  the turns they came from): it becomes the memory's quote even when the turn search did not
  find it near the query;
- **no stale facts through the back door**: a turn cited only by *superseded* memories (a
  knowledge update replaced what it says) is demoted by ``stale_penalty``; a turn cited by a
  current memory is not, whatever else cites it;
- **trust**: a turn a labelled memory cites carries that memory's label
  (:func:`carry_labels`, the most sensitive one) and is left out with
  ``include_sensitive=false``, whether or not the label was copied onto the turn yet;
- **lexical**, optional: BM25 of the query's words over both kinds together, added to every
  score with a small weight (RECALL_FUSION_LEXICAL_WEIGHT);
- **no fragments of passed-over turns**: a memory that only restates turns the turn search
  did not find — every word of it is theirs (:mod:`~eros.recall.core.fusion_words`; the heuristic
  extractor's clauses) — is left out: it is a piece of a turn, not a fact written about it,
  and its slot goes to what the turn search found (RECALL_FUSION_SKIP_RESTATEMENTS);
- **a small memory pool whole**: past the first ``memory_tail_after`` items, the memories left
  go before the turns left when the pool renders within ``memory_tail_tokens``
  (:mod:`~eros.recall.core.fusion_budget`: a small user's short lines fit a budget whole) —
  after ``remark_tail_after`` items when the query is a remark, not a question
  (:mod:`~eros.recall.core.fusion_intent`: a remark asks what is known, not what was said) —
  only the turns that open the list keep their places there (``remark_lead_turns``), and
  the best memories of a pool of any size take the window after them
  (``remark_memory_tokens``: a remark's first tokens hold what is known);
- **a budget**: :func:`within_budget` cuts the ranked list where the rendered tokens would
  pass RECALL_TOKEN_BUDGET.

Ties are broken deterministically (score, then memory before turn, then similarity, then newer,
then id), as everywhere in recall.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from eros.core.sensitivity import most_sensitive
from eros.core.text import estimate_tokens
from eros.recall.core.fusion_budget import arranged, per_token, remembered, stand_ins
from eros.recall.core.fusion_intent import for_intent
from eros.recall.core.fusion_params import FusionParams as FusionParams
from eros.recall.core.fusion_subject import newer_first
from eros.recall.core.fusion_words import cited, restates_unfound, said_in_words
from eros.recall.core.lexical import bm25
from eros.recall.core.lexical import fuse as rrf
from eros.recall.core.ranking import Scored, age_days, composite_score, similarity

Kind = Literal["memory", "turn"]


@dataclass(frozen=True)
class TurnCandidate:
    """One user turn the turn search found near the query (``engine.memory_turns``)."""

    seq: int
    session_id: str
    said_at: datetime
    content: str
    #: cosine distance to the query, in [0, 2]
    distance: float
    sensitivity: str | None = None


@dataclass(frozen=True)
class FusedItem:
    """One entry of the fused list: a memory (``memory``) or a turn (``turn``)."""

    kind: Kind
    score: float
    similarity: float
    memory: Scored | None = None
    turn: TurnCandidate | None = None
    #: a memory's quotes: the turns it cites that the search found (or that it lifted)
    quotes: tuple[TurnCandidate, ...] = field(default=())
    #: a turn only superseded memories cite (demoted)
    stale: bool = False

    @property
    def key(self) -> str:
        if self.memory is not None:
            return f"m:{self.memory.candidate.id}"
        assert self.turn is not None
        return f"t:{self.turn.seq}"

    @property
    def content(self) -> str:
        if self.memory is not None:
            return self.memory.candidate.content
        assert self.turn is not None
        return self.turn.content


def carry_labels(turns: Sequence[TurnCandidate], inherited: Mapping[int, str], *,
                 include_sensitive: bool) -> list[TurnCandidate]:
    """``turns``, each labelled with the most sensitive of its own label and the one it
    ``inherited`` from the memories citing it (seq -> label); with ``include_sensitive=False``
    every turn left with a label is dropped (a turn a labelled memory cites
    is as sensitive as that memory)."""
    out = []
    for t in turns:
        label = most_sensitive([t.sensitivity, inherited.get(t.seq)])
        if label is not None and not include_sensitive:
            continue
        out.append(t if label == t.sensitivity else replace(t, sensitivity=label))
    return out


def turn_score(turn: TurnCandidate, params: FusionParams, *, stale: bool = False) -> float:
    """``composite``'s formula with the default importance, minus the turn offset (and the
    stale penalty for a turn cited only by superseded memories)."""
    score = composite_score(similarity(turn.distance), age_days(turn.said_at, params.now),
                            None, tau_days=params.composite_tau_days,
                            default_importance=params.default_importance,
                            weight=params.composite_weight)
    score += params.importance_weight * params.default_importance
    return score - params.turn_offset - (params.stale_penalty if stale else 0.0)


def with_importance(memories: Sequence[Scored], params: FusionParams) -> list[Scored]:
    """``memories`` with ``importance_weight × importance`` added to each score (a row
    without one: the default importance), whatever its age — the extractor's judgment of
    what matters orders near-equal memories; recency (``composite_weight``) buried the old
    confidences implicit recall is about, importance alone does not."""
    w = params.importance_weight
    if w <= 0:
        return list(memories)
    return [replace(m, score=m.score + w * (params.default_importance
                                             if m.candidate.importance is None
                                             else m.candidate.importance))
            for m in memories]


def _when(item: FusedItem) -> datetime:
    if item.memory is not None:
        return item.memory.candidate.created_at
    assert item.turn is not None
    return item.turn.said_at


def _cites(a: FusedItem, b: FusedItem) -> bool:
    """Whether one of the two is a memory written from the other (a turn)."""
    for memory, turn in ((a, b), (b, a)):
        if memory.memory is not None and turn.turn is not None:
            sources = memory.memory.candidate.sources
            if sources and not memory.memory.candidate.source_fallback \
                    and turn.turn.seq in sources:
                return True
    return False


def _order(item: FusedItem) -> tuple[float, int, float, float, str]:
    when = item.memory.candidate.created_at if item.memory is not None else \
        item.turn.said_at  # type: ignore[union-attr]
    return (-item.score, 0 if item.kind == "memory" else 1, -item.similarity,
            -when.timestamp(), item.key)


#: the smallest spread :func:`standardised` divides by (a pool of near-equal scores)
Z_FLOOR = 0.01


def standardised(items: list[FusedItem], turn_offset: float) -> list[FusedItem]:
    """Each kind's scores as standard scores over that kind's own pool: how far an item
    stands out from the rest of its kind, so a turn and a memory compare by how clearly each
    answers, not by the embedder's different scales for a sentence and a fact. A turn pays
    ``turn_offset`` standard deviations (its raw score already paid it once: added back)."""
    out = list(items)
    for kind in ("memory", "turn"):
        members = [i for i, item in enumerate(out) if item.kind == kind]
        if not members:
            continue
        back = turn_offset if kind == "turn" else 0.0
        values = [out[i].score + back for i in members]
        mean = sum(values) / len(values)
        spread = max(Z_FLOOR, (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5)
        for i, v in zip(members, values, strict=True):
            out[i] = replace(out[i], score=(v - mean) / spread - back)
    return out


def _own_orders(items: list[FusedItem], query_text: str | None, params: FusionParams
                ) -> tuple[list[FusedItem], list[FusedItem]]:
    """Each kind in its own order: memories by their strategy's score, turns by theirs fused
    with BM25 over the turn pool (reciprocal rank) when ``lexical_weight`` and the query text
    are given — a turn saying fewer than ``lexical_min_terms`` of the query's words has no
    BM25 rank (one shared word is most often a name or an everyday word, not the answer)."""
    memories = sorted((i for i in items if i.kind == "memory"), key=_order)
    turns = sorted((i for i in items if i.kind == "turn"), key=_order)
    if query_text and params.lexical_weight > 0 and turns:
        order = rrf(range(len(turns)), bm25(query_text, [t.content for t in turns],
                                            min_terms=params.lexical_min_terms),
                    tied=params.lexical_ties)
        turns = [turns[i] for i in order]
    return memories, turns


def by_standing(items: list[FusedItem], query_text: str | None,
                params: FusionParams) -> list[FusedItem]:
    """Calibration by standing: each kind keeps its own order (:func:`_own_orders`), and the
    item at rank r of a kind scores how far that kind's r-th best similarity stands above
    the kind's own nearest ``standing_depth`` (a standard score over them). The two kinds
    meet on that scale, not on the embedder's (a clean fact and a chatty sentence sit at
    different cosines): a kind whose best clearly stands out of its own pool takes the top
    slots, a kind where nothing stands out (a confidence diluted in a long turn, among
    everyday talk) yields them — per query, so neither kind is given a fixed share. A turn
    pays ``turn_offset`` standard deviations (at equal standing the memory wins), and gains
    ``lexical_lead`` of them when a turn of the pool says the query in its own words
    (:func:`said_in_words`); a stale turn goes after every other. A spread over fewer than
    :data:`STANDING_MIN` items of either kind says nothing (one memory stands out of
    nothing): such a query is calibrated by rank (:func:`by_rank`)."""
    memories, turns = _own_orders(items, query_text, params)
    if min(len(memories), len(turns)) < STANDING_MIN:
        return by_rank(items, query_text, params)
    offset = params.turn_offset
    if params.lexical_lead and said_in_words(query_text, [t.content for t in turns],
                                             params.lexical_min_terms):
        offset -= params.lexical_lead
    out: list[FusedItem] = []
    for kind, members in (("memory", memories), ("turn", turns)):
        if not members:
            continue
        sims = sorted((i.similarity for i in members), reverse=True)
        head = sims[:params.standing_depth]
        mean = sum(head) / len(head)
        spread = max(Z_FLOOR, (sum((v - mean) ** 2 for v in head) / len(head)) ** 0.5)
        for r, item in enumerate(members):
            standing = (sims[r] - mean) / spread
            if kind == "turn":
                standing -= offset + (STALE_LAST if item.stale
                                      and params.stale_penalty > 0 else 0.0)
            out.append(replace(item, score=standing))
    return out


#: what a stale turn loses under ``standing``: more than any spread of standard scores
STALE_LAST = 1000.0
#: the fewest items of each kind ``standing`` measures a spread over
STANDING_MIN = 5


def by_rank(items: list[FusedItem], query_text: str | None,
            params: FusionParams) -> list[FusedItem]:
    """Reciprocal-rank calibration: each kind in its own order (:func:`_own_orders`), a
    memory at rank r scoring ``memory_weight / (c + r)``, a turn ``1 / (c + r)``; a stale
    turn (its score carries the penalty) goes after every other."""
    memories, turns = _own_orders(items, query_text, params)
    c = params.rank_c
    out = [replace(m, score=params.memory_weight / (c + r)) for r, m in enumerate(memories, 1)]
    for r, t in enumerate(turns, 1):
        demote = 1.0 if t.stale and params.stale_penalty > 0 else 0.0
        out.append(replace(t, score=1 / (c + r) - demote))
    return out


def with_lexical(items: list[FusedItem], query_text: str | None,
                 weight: float) -> list[FusedItem]:
    """Each item's score plus ``weight`` × its BM25 for ``query_text`` over the whole pool,
    scaled by the pool's best (a no-op without a query text or a weight)."""
    if not query_text or weight <= 0 or not items:
        return items
    scores = bm25(query_text, [i.content for i in items])
    best = max(scores)
    if best <= 0:
        return items
    return [replace(i, score=i.score + weight * s / best) for i, s in zip(items, scores,
                                                                          strict=True)]


def fuse(memories: Sequence[Scored], turns: Sequence[TurnCandidate], *, k: int,
         params: FusionParams, stale: Iterable[int] = (),
         lifted: Sequence[TurnCandidate] = (), query_text: str | None = None,
         cost: Callable[[FusedItem], int] | None = None) -> list[FusedItem]:
    """The fused top ``k``: ``memories`` ranked by their strategy (their ``score``),
    ``turns`` from the turn search, ``stale`` the seqs cited only by superseded memories,
    ``lifted`` turns read by seq because a memory cites them (quotes only, never items);
    ``query_text`` for the lexical term (``params.lexical_weight``); ``cost`` an item's
    rendered tokens (``params.memory_stands_in``: only a shorter memory stands in)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    params = for_intent(params, query_text, [t.content for t in turns])
    stale_seqs = frozenset(stale)
    if params.drop_unfound_restatements:
        found = frozenset(t.seq for t in turns)
        texts = {t.seq: t.content for t in (*lifted, *turns)}
        memories = [m for m in memories if not restates_unfound(m, found, texts)]
    items = [FusedItem("memory", m.score, m.similarity, memory=m)
             for m in with_importance(memories, params)]
    seen: set[int] = set()
    for t in turns:
        if t.seq in seen:
            continue
        seen.add(t.seq)
        items.append(FusedItem("turn", turn_score(t, params, stale=t.seq in stale_seqs),
                               similarity(t.distance), turn=t, stale=t.seq in stale_seqs))
    if params.calibration == "rank":
        items = by_rank(items, query_text, params)
    elif params.calibration == "standing":
        items = by_standing(items, query_text, params)
    else:
        if params.calibration == "z":
            items = standardised(items, params.turn_offset)
        items = with_lexical(items, query_text, params.lexical_weight)
    price = remembered(cost if cost is not None else _estimated)
    items = per_token(items, params.token_weight, price, turns_only=params.token_turns_only)
    items.sort(key=_order)
    items = newer_first(items, params.newer_first_depth, query_text,
                        text=lambda i: i.content, dated=_when, cites=_cites)
    by_seq = {t.seq: t for t in (*lifted, *turns)}
    standing_in = stand_ins(items, price if cost is not None else None) \
        if params.memory_stands_in else {}
    out: list[FusedItem] = []
    placed: set[str] = set()  # keys of the memories already in out
    quoted: dict[int, int] = {}  # seq → index in out of the memory that cites it
    returned: set[int] = set()  # seqs of turns returned as items
    for item in items:
        if len(out) >= k:
            break
        if item.turn is not None and item.turn.seq not in quoted \
                and item.turn.seq in standing_in:
            item = items[standing_in[item.turn.seq]]  # the shorter memory, in its place
        if item.memory is not None:
            if item.key in placed:
                continue
            sources = cited(item.memory)
            if sources and sources <= returned:
                continue  # every turn it came from is already in the list, above it
            index = len(out)
            for seq in sources - returned:
                quoted.setdefault(seq, index)
            quotes = tuple(by_seq[s] for s in sorted(sources) if s in by_seq
                           and quoted.get(s) == index)
            placed.add(item.key)
            out.append(replace(item, quotes=quotes))
            continue
        assert item.turn is not None
        if item.turn.seq in quoted:
            continue  # already in the list as a memory's quote
        returned.add(item.turn.seq)
        out.append(item)
    return arranged(out, params, [m.candidate.content for m in memories], price)


def _estimated(item: FusedItem) -> int:
    return estimate_tokens(item.content) + 1
