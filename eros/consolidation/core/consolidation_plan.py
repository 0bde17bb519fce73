"""The plan of a consolidation pass: which rows stop being current, into which canonical row.

A plan is a list of *steps*. A step is the unit that is applied or skipped as a whole when the
write transaction re-checks the rows (a concurrent pass may have consolidated some of them
meanwhile): one exact-duplicate group, or one cluster the model decided.

Rules:

- exact copies merge into the newest copy (no model, no new row, no embedding);
- a decided cluster with two or more duplicates, or anything superseded, gets a canonical row;
  when the canonical text is one of its duplicates (same normalised text and category) that
  member *is* the canonical and stays current — no new row, no re-embedding, provenance kept;
  otherwise a new row is written with the model's text and dated like its newest source, so
  consolidation never makes an old fact look fresh to recency ranking;
- a single duplicate with nothing superseded changes nothing (rewording one memory is not
  consolidation);
- importance: the model's, else the highest of the sources.

Nothing is deleted: a replaced row keeps its text and points at the row that replaced it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from eros.consolidation.core.consolidation import Clustering, ExactGroup, Memory, Selection
from eros.consolidation.core.consolidation_reply import Decision, ReplyResult
from eros.core.text import normalise_for_dedup

Status = Literal["merged", "superseded"]
Action = Literal["merge", "supersede"]


@dataclass(frozen=True)
class NewRow:
    """A canonical memory to insert (its embedding is computed after planning)."""

    id: uuid.UUID
    content: str
    category: str
    importance: float | None
    instance_id: uuid.UUID | None
    #: the date of its newest source.
    created_at: datetime
    source_ids: tuple[uuid.UUID, ...]


@dataclass(frozen=True)
class Change:
    memory_id: uuid.UUID
    status: Status
    replaced_by: uuid.UUID


@dataclass(frozen=True)
class HistoryEntry:
    action: Action
    result_id: uuid.UUID
    source_ids: tuple[uuid.UUID, ...]
    details: dict[str, Any]


@dataclass(frozen=True)
class Step:
    kind: Literal["exact", "cluster"]
    #: every existing memory the step touches; all must still be current for it to apply.
    requires: tuple[uuid.UUID, ...]
    changes: tuple[Change, ...]
    history: tuple[HistoryEntry, ...]
    new_row: NewRow | None = None
    #: (memory id, importance) for a kept canonical whose importance changes.
    importance: tuple[uuid.UUID, float] | None = None
    cluster: int | None = None
    result_id: uuid.UUID | None = None

    @property
    def merged(self) -> int:
        return sum(1 for c in self.changes if c.status == "merged")

    @property
    def superseded(self) -> int:
        return sum(1 for c in self.changes if c.status == "superseded")


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    #: the members of the clusters this call asked about, stamped ``consolidation_seen_at``
    #: so that a cluster is asked about again only when something new joins it. A cluster
    #: whose answer was rejected counts as judged too: a model that keeps garbling one cluster
    #: then costs a call per new memory, not one per pass. Members of clusters that did not fit
    #: the call (deferred, or cut off by the size cap) are ``unresolved``: not stamped, and the
    #: finder comes back for them. Memories in no cluster need no stamp (it would rewrite the
    #: row and its vector for nothing).
    judged: frozenset[uuid.UUID]
    unresolved: frozenset[uuid.UUID] = field(default_factory=frozenset)

    @property
    def new_rows(self) -> tuple[NewRow, ...]:
        return tuple(s.new_row for s in self.steps if s.new_row is not None)

    @property
    def merged(self) -> int:
        return sum(s.merged for s in self.steps)

    @property
    def superseded(self) -> int:
        return sum(s.superseded for s in self.steps)


def _max_importance(memories: Sequence[Memory]) -> float | None:
    values = [m.importance for m in memories if m.importance is not None]
    return max(values) if values else None


def exact_step(group: ExactGroup) -> Step:
    keep = group.keep
    changes = tuple(Change(m.id, "merged", keep.id) for m in group.merged)
    history = HistoryEntry("merge", keep.id, tuple(m.id for m in group.merged),
                           {"kind": "exact", "copies": len(group.merged) + 1})
    best = _max_importance([keep, *group.merged])
    importance = (keep.id, best) if best is not None and best != keep.importance else None
    return Step("exact", (keep.id, *(m.id for m in group.merged)), changes, (history,),
                importance=importance, result_id=keep.id)


def decision_step(decision: Decision, new_id: Callable[[], uuid.UUID]) -> Step | None:
    """The step for one decided cluster, or None when it changes nothing."""
    if not decision.changes or decision.canonical is None:
        return None
    canonical = decision.canonical
    key = normalise_for_dedup(canonical.content)
    same = [m for m in decision.duplicates
            if normalise_for_dedup(m.content) == key and m.category == canonical.category]
    sources = (*decision.duplicates, *decision.superseded)
    importance = canonical.importance if canonical.importance is not None \
        else _max_importance(sources)
    new_row: NewRow | None = None
    kept_importance: tuple[uuid.UUID, float] | None = None
    if same:
        result = same[-1]  # the newest member with the canonical text
        result_id = result.id
        if importance is not None and importance != result.importance:
            kept_importance = (result.id, importance)
    else:
        result_id = new_id()
        newest = max(m.created_at for m in decision.duplicates)
        new_row = NewRow(result_id, canonical.content, canonical.category, importance,
                         decision.cluster.cluster.instance_id, newest,
                         tuple(m.id for m in sources))
    merged = tuple(m for m in decision.duplicates if m.id != result_id)
    changes = tuple([*(Change(m.id, "merged", result_id) for m in merged),
                     *(Change(m.id, "superseded", result_id) for m in decision.superseded)])
    details = {"kind": "llm", "cluster": decision.cluster.number,
               "canonical": canonical.content, "kept_member": new_row is None,
               "separate": [str(m.id) for m in decision.separate]}
    history = []
    if merged:
        history.append(HistoryEntry("merge", result_id, tuple(m.id for m in merged), details))
    if decision.superseded:
        history.append(HistoryEntry("supersede", result_id,
                                    tuple(m.id for m in decision.superseded), details))
    requires = tuple(m.id for m in sources)
    return Step("cluster", requires, changes, tuple(history), new_row=new_row,
                importance=kept_importance, cluster=decision.cluster.number,
                result_id=result_id)


def build_plan(clustering: Clustering, selection: Selection, reply: ReplyResult | None, *,
               new_id: Callable[[], uuid.UUID] = uuid.uuid4) -> Plan:
    """Steps for every exact group and every decided cluster, and what counts as judged."""
    steps = [exact_step(g) for g in clustering.exact]
    if reply is not None:
        for decision in reply.decisions:
            step = decision_step(decision, new_id)
            if step is not None:
                steps.append(step)
    unresolved: set[uuid.UUID] = set()
    for item in selection.deferred:
        unresolved.update(m.id for m in item.members)
    for item in (*(p.cluster for p in selection.sent), *selection.deferred, *selection.settled):
        unresolved.update(m.id for m in item.overflow)
    judged = {m.id for p in selection.sent for m in p.cluster.members}
    return Plan(tuple(steps), frozenset(judged - unresolved), frozenset(unresolved))
