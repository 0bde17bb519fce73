"""``eros rescreen`` over the turns recall layer: the current guard re-judges
every indexed turn that is recallable or could be made so, exactly as the classify path judges
a turn it indexes (:func:`eros.dreaming.services.turn_index.status_of`, on the turn's stored vector:
no embedding call when it is the configured embedder's).

- a ``current`` turn the meaning layer (or its second opinion) now rejects becomes
  ``quarantined`` (never recalled; ``eros rescreen --restore-turn SEQ`` undoes it);
- a ``current`` or ``quarantined`` turn the rules, the secret checks or the length cap now
  reject leaves the index (the classify path would not index it today);
- a ``quarantined`` turn the guard now passes stays quarantined: as for memories, making one
  recallable again is an operator's decision (``--restore-turn``), not a guard change's;
- ``unscreened`` turns are ``eros.screen_unscreened``'s.

Counts by reason only, never text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from sqlalchemy import Engine

from eros.dreaming.services.turn_index import judged_text, status_of
from eros.guard.services.guard_model import screen_texts
from eros.providers.base import ChatCompleter, Embedder
from eros.recall.db import turn_trust_sql
from eros.settings import Settings


@dataclass
class TurnRescreen:
    """What a rescreen of the turns found and did (``dry_run``: found only)."""

    scanned: int = 0
    quarantined: int = 0
    removed: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def rescreen_turns(settings: Settings, engine: Engine, embedder: Embedder, *,
                   llm: ChatCompleter | None = None, dry_run: bool = False,
                   batch: int = 500) -> TurnRescreen:
    """Re-judge every ``current`` and ``quarantined`` turn (the caller checked that the
    meaning layer has its model)."""
    report = TurnRescreen()
    reasons: Counter[str] = Counter()
    for rows in turn_trust_sql.screenable_turns(engine, batch=batch):
        vectors = [t.embedding if t.embedding_model == embedder.name else None for t in rows]
        screening = screen_texts(settings, engine, embedder, [], llm=llm, vectors=vectors,
                                 need_vectors=False,
                                 turns=[judged_text(t.content, t.channel) for t in rows])
        quarantine, remove = [], []
        for turn, verdict in zip(rows, screening.verdicts, strict=True):
            status = status_of(verdict, False)
            if status is None:
                remove.append(turn.seq)
            elif status == "quarantined" and turn.status == "current":
                quarantine.append(turn.seq)
            else:
                continue
            reasons[verdict.reason or "unknown"] += 1
        report.scanned += len(rows)
        if dry_run:
            report.quarantined += len(quarantine)
            report.removed += len(remove)
            continue
        with engine.begin() as conn:
            report.quarantined += turn_trust_sql.quarantine_turns(conn, quarantine)
            report.removed += turn_trust_sql.remove_turns(conn, remove)
    report.by_reason = dict(sorted(reasons.items()))
    return report
