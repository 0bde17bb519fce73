"""What a consolidation pass found and did (or, dry-run, would do), and how a person reads
its clusters and steps: for logs, the CLI, the task's result, tests and metrics."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from eros.consolidation.core.consolidation import Memory, Selection
from eros.consolidation.core.consolidation_plan import Step
from eros.core.outcomes import ConsolidationOutcome


@dataclass
class ConsolidationReport:
    """What one pass found and did (or, dry-run, would do): for logs, the CLI, the task's
    result, tests and metrics (:meth:`metrics`)."""

    user_id: str
    outcome: ConsolidationOutcome = "pending"
    dry_run: bool = False
    #: the memories the pass looked at: the new ones compared and their near neighbours
    #: (the shares below are over these, not over all the user's memories).
    memories: int = 0
    #: not-yet-compared memories this pass compared (one chunk).
    compared: int = 0
    #: "exact", "quantised" or "hnsw": how the neighbours were searched.
    search: str = ""
    #: memories still waiting to be compared after this pass (the next chunk).
    backlog: bool = False
    share_before: float = 0.0
    share_after: float | None = None
    exact_groups: int = 0
    clusters: int = 0
    clusters_sent: int = 0
    clusters_deferred: int = 0
    clusters_settled: int = 0
    merged: int = 0
    superseded: int = 0
    canonical_written: int = 0
    steps_skipped: int = 0
    llm_calls: int = 0
    embedding_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    model: str | None = None
    error: str | None = None
    raw_reply: str = ""
    rejected: list[dict[str, Any]] = field(default_factory=list)
    #: canonical texts the memory guard dropped, by reason (counts only, docs/security.md).
    guard_dropped: dict[str, int] = field(default_factory=dict)
    cluster_view: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    #: milliseconds per phase: read, cluster, llm, embed, write.
    timings: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """The numbers worth exporting (e.g. as Prometheus counters/gauges), by name."""
        return {"near_dup_share_before": self.share_before,
                "near_dup_share_after": self.share_after if self.share_after is not None
                else self.share_before,
                "memories_merged": self.merged, "memories_superseded": self.superseded,
                "canonical_written": self.canonical_written, "llm_calls": self.llm_calls,
                "embedding_calls": self.embedding_calls, "clusters_sent": self.clusters_sent,
                "clusters_rejected": len(self.rejected),
                "guard_dropped": sum(self.guard_dropped.values()),
                **{f"{k}_ms": v for k, v in self.timings.items()}}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def timed(report: ConsolidationReport, phase: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        report.timings[phase] = round((time.perf_counter() - start) * 1000, 3)


def cluster_view(selection: Selection) -> list[dict[str, Any]]:
    view = []
    for item in selection.sent:
        view.append({"cluster": item.number, "category": item.cluster.category, "sent": True,
                     "members": [member(n, m) for n, m in zip(item.numbers,
                                                               item.cluster.members,
                                                               strict=True)]})
    for other in (*selection.deferred, *selection.settled):
        view.append({"cluster": None, "category": other.category, "sent": False,
                     "reason": "deferred" if other in selection.deferred else "already judged",
                     "members": [member(None, m) for m in other.members]})
    return view


def member(number: int | None, m: Memory) -> dict[str, Any]:
    return {"number": number, "id": str(m.id), "content": m.content,
            "created_at": m.created_at.isoformat(), "new": not m.seen}


def describe(step: Step, by_id: dict[uuid.UUID, Memory]) -> dict[str, Any]:
    """One step as a person reads it: which rows stop being current, into what."""
    target = step.new_row.content if step.new_row else by_id[step.result_id].content \
        if step.result_id in by_id else None
    return {"kind": step.kind, "cluster": step.cluster,
            "result_id": str(step.result_id), "result": target,
            "new_row": step.new_row is not None,
            "changes": [{"id": str(ch.memory_id), "status": ch.status,
                         "content": by_id[ch.memory_id].content if ch.memory_id in by_id
                         else None} for ch in step.changes]}
