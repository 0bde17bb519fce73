"""Settle ``unscreened`` memories once the meaning layer has its model: the beat
task ``eros.screen_unscreened`` and ``eros guard train``.

A memory is written ``unscreened`` when it passed the rules and the secret checks while no
meaning model existed yet (a live embedder whose model was still being trained): never recalled
nor consolidated meanwhile. Here each one is judged exactly like a candidate (:func:`screen_texts`
on its stored vector: no embedding call when the vector is from the configured embedder) and
becomes ``current``, or ``quarantined`` with the reason (codes, never text; ``eros rescreen
--restore`` undoes one). While the layer is still pending nothing changes; with the layer off or
unusable the rules' verdict alone decides (there will be no model to wait for).

The user's turns indexed ``unscreened`` are judged the same way, on their stored
vectors, as the classify path judges a turn: ``current``, ``quarantined`` when the meaning
layer rejects it, and removed from the index when the rules now do (a turn the rules reject is
never indexed).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Literal

from sqlalchemy import Engine

from eros.dreaming.services.turn_index import judged_text, status_of
from eros.guard.db import guard_sql, turn_guard_sql
from eros.guard.services.guard_model import meaning_layer, screen_texts
from eros.ops import metrics
from eros.providers.base import ChatCompleter, Embedder
from eros.settings import Settings

log = logging.getLogger(__name__)

SettleOutcome = Literal["settled", "pending"]


@dataclass
class SettleReport:
    #: ``settled``, or ``pending`` (no model yet: nothing changed)
    outcome: SettleOutcome
    layer: str
    scanned: int = 0
    current: int = 0
    quarantined: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    #: the user's turns: scanned, and what each became (``removed``: the rules
    #: now reject it, so it left the index)
    turns_scanned: int = 0
    turns: dict[str, int] = field(default_factory=dict)

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
    if report.outcome == "settled":
        _settle_turns(settings, engine, embedder, llm, batch, report)
    report.by_reason = dict(sorted(reasons.items()))
    if reasons:
        metrics.record_guard_drops("unscreened", dict(reasons))
    if report.scanned or report.turns_scanned:
        log.info("unscreened memories settled: scanned=%d current=%d quarantined=%d "
                 "turns_scanned=%d turns=%s", report.scanned, report.current,
                 report.quarantined, report.turns_scanned,
                 ",".join(f"{k}:{v}" for k, v in sorted(report.turns.items())) or "-")
    return report


def _settle_turns(settings: Settings, engine: Engine, embedder: Embedder,
                  llm: ChatCompleter | None, batch: int, report: SettleReport) -> None:
    settled: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for rows in turn_guard_sql.unscreened_turns(engine, batch=batch):
        vectors = [t.embedding if t.embedding_model == embedder.name else None for t in rows]
        screening = screen_texts(settings, engine, embedder, [], llm=llm, vectors=vectors,
                                 need_vectors=False,
                                 turns=[judged_text(t.content, t.channel) for t in rows])
        if screening.pending:
            report.outcome = "pending"
            break
        decisions = [(t.seq, status_of(v, False) or "removed")
                     for t, v in zip(rows, screening.verdicts, strict=True)]
        with engine.begin() as conn:
            settled.update(turn_guard_sql.settle_unscreened(conn, decisions))
        report.turns_scanned += len(rows)
        reasons.update(v.reason or "unknown" for v in screening.verdicts if not v.ok)
    report.turns = dict(sorted(settled.items()))
    if reasons:
        metrics.record_guard_drops("turn", dict(reasons))
