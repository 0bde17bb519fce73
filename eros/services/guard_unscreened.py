"""Settle ``unscreened`` memories once the meaning layer has its model (issue 30): the beat
task ``eros.screen_unscreened`` and ``eros guard train``.

A memory is written ``unscreened`` when it passed the rules and the secret checks while no
meaning model existed yet (a live embedder whose model was still being trained): never recalled
nor consolidated meanwhile. Here each one is judged exactly like a candidate (:func:`screen_texts`
on its stored vector: no embedding call when the vector is from the configured embedder) and
becomes ``current``, or ``quarantined`` with the reason (codes, never text; ``eros rescreen
--restore`` undoes one). While the layer is still pending nothing changes; with the layer off or
unusable the rules' verdict alone decides (there will be no model to wait for).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import asdict, dataclass, field

from sqlalchemy import Engine

from eros.db import guard_sql
from eros.ops import metrics
from eros.providers.base import ChatCompleter, Embedder
from eros.services.guard_model import meaning_layer, screen_texts
from eros.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class SettleReport:
    #: ``settled``, or ``pending`` (no model yet: nothing changed)
    outcome: str
    layer: str
    scanned: int = 0
    current: int = 0
    quarantined: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def settle_unscreened(settings: Settings, engine: Engine, embedder: Embedder, *,
                      llm: ChatCompleter | None = None, batch: int = 500) -> SettleReport:
    layer = meaning_layer(settings, engine, embedder)
    report = SettleReport("pending" if layer.pending else "settled", layer.state)
    if layer.pending:
        return report
    reasons: Counter[str] = Counter()
    for rows in guard_sql.unscreened_memories(engine, batch=batch):
        vectors = [m.embedding if m.embedding_model == embedder.name else None for m in rows]
        screening = screen_texts(settings, engine, embedder, [m.content for m in rows],
                                 llm=llm, vectors=vectors, need_vectors=False)
        if screening.pending:  # the model went away (a bank change mid-run): try later
            report.outcome = "pending"
            break
        keep = [m.id for m, v in zip(rows, screening.verdicts, strict=True) if v.ok]
        drop = [(m.id, {"reason": v.reason or "unknown", "rule": v.rule or "",
                        "layer": v.layer or ""})
                for m, v in zip(rows, screening.verdicts, strict=True) if not v.ok]
        with engine.begin() as conn:
            made_current, moved = guard_sql.settle_unscreened(conn, keep, drop)
        report.scanned += len(rows)
        report.current += made_current
        report.quarantined += moved
        reasons.update(why["reason"] for _, why in drop)
    report.by_reason = dict(sorted(reasons.items()))
    if reasons:
        metrics.record_guard_drops("unscreened", dict(reasons))
    if report.scanned:
        log.info("unscreened memories settled: scanned=%d current=%d quarantined=%d",
                 report.scanned, report.current, report.quarantined)
    return report
