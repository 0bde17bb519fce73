"""What recall returns: the recalled memories and, for ``fused``, the user's own turns — each
item saying what it is (``kind``), when it is from and where it came from — and how they
were found (docs/recall.md)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal

from eros.core.names import DEFAULT_LABELS, LabelSet, RecallStrategy, Scope
from eros.core.sensitivity import CRISIS
from eros.recall.core.ranking import Layer
from eros.recall.core.render import Labels, render_memories
from eros.recall.core.render_fused import render_fused
from eros.recall.services.read_route import Source
from eros.recall.services.recall_search import Plan


@dataclass(frozen=True)
class RecalledTurn:
    """One of the user's own turns (``fused``): what they said, when, in which session."""

    kind: ClassVar[Literal["turn"]] = "turn"
    #: ``chat_messages.seq`` of the turn
    seq: int
    session_id: uuid.UUID
    said_at: datetime
    content: str
    similarity: float
    score: float
    sensitivity: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "seq": self.seq, "session_id": str(self.session_id),
                "said_at": self.said_at.isoformat(), "content": self.content,
                "similarity": round(self.similarity, 6), "score": round(self.score, 6),
                "sensitivity": self.sensitivity}


@dataclass(frozen=True)
class RecalledMemory:
    """One recalled memory: what it says, where it lives, and why it ranked where it did."""

    kind: ClassVar[Literal["memory"]] = "memory"
    id: uuid.UUID
    content: str
    category: str
    importance: float | None
    created_at: datetime
    layer: Layer
    similarity: float
    score: float
    #: provenance ("why do you remember this?"): the ``chat_messages.seq`` values it came
    #: from, sorted; None = not recorded (written before provenance, or not read).
    sources: tuple[int, ...] | None = None
    #: the model's citation was missing or invalid: ``sources`` is the extraction window.
    source_fallback: bool = False
    #: special category (``health``, ``crisis``, …; core/sensitivity.py), None = none.
    sensitivity: str | None = None
    #: ``fused``: the turns it came from, as the user said them (its quotes; a turn quoted
    #: here is not returned again as an item of its own).
    quotes: tuple[RecalledTurn, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "id": str(self.id), "content": self.content,
               "category": self.category, "importance": self.importance,
               "created_at": self.created_at.isoformat(), "layer": self.layer,
               "similarity": round(self.similarity, 6), "score": round(self.score, 6),
               "sources": None if self.sources is None else list(self.sources),
               "source_fallback": self.source_fallback, "sensitivity": self.sensitivity}
        if self.quotes:
            out["quotes"] = [q.seq for q in self.quotes]
        return out


Recalled = RecalledMemory | RecalledTurn


@dataclass(frozen=True)
class RecallResult:
    """The ranked memories plus how they were found (plan, exactness, timings in ms).

    ``fused`` also returns turns: ``items`` is its one ranked list (memories and turns, each
    with its ``kind``), ``memories`` and ``turns`` its two kinds; other strategies return
    memories only (``items`` is ``memories``)."""

    memories: list[RecalledMemory]
    strategy: RecallStrategy
    scope: Scope
    k: int
    plan: Plan
    exact: bool
    #: an HNSW scan gave up (``hnsw.max_scan_tuples``) and that part was redone exactly.
    fallback: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    #: the database that answered: ``replica`` (DATABASE_REPLICA_URL) or ``primary``.
    source: Source = "primary"
    turns: list[RecalledTurn] = field(default_factory=list)
    #: ``fused``: memories and turns in rank order (None: ``memories``)
    ranked: list[Recalled] | None = None
    #: ``fused``: the token budget the rendered section keeps to (RECALL_TOKEN_BUDGET)
    budget: int | None = None

    @property
    def items(self) -> list[Recalled]:
        return list(self.memories) if self.ranked is None else list(self.ranked)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
               "strategy": self.strategy, "scope": self.scope, "k": self.k, "plan": self.plan,
               "exact": self.exact, "fallback": self.fallback, "source": self.source,
               # a recalled memory (or turn) about self-harm, suicidal thoughts or abuse
               "crisis": any(i.sensitivity == CRISIS for i in self.items),
               "timings_ms": {k: round(v, 3) for k, v in self.timings.items()},
               "memories": [m.to_dict() for m in self.memories]}
        if self.ranked is not None:
            out["turns"] = [t.to_dict() for t in self.turns]
            out["items"] = [{"kind": i.kind, "id": str(i.id)} if isinstance(i, RecalledMemory)
                            else {"kind": i.kind, "seq": i.seq} for i in self.ranked]
            out["budget"] = self.budget
        return out

    def render(self, labels: LabelSet | str | Labels = DEFAULT_LABELS, *,
               dated: bool = False) -> str:
        return render_prompt(self, labels, dated=dated)


def render_prompt(result: RecallResult, labels: LabelSet | str | Labels = DEFAULT_LABELS, *,
                  dated: bool = False) -> str:
    """The system-prompt section for a result: grouped by category, one bullet a memory
    (with ``dated``, ending with the day it is about), duplicates across layers pruned
    (profile wins), an empty-state line when nothing. A ``fused`` result adds the user's own
    turns, quoted and dated, under their own header, within its token budget."""
    if result.ranked is not None:
        return render_fused(result.ranked, labels, dated=dated, budget=result.budget)
    return render_memories(result.memories, labels, dated=dated)
