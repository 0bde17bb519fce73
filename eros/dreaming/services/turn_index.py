"""The user's turns as a recall layer: which turns are indexed, with which
label and status. One rule for the classify path and for ``eros turns backfill``.

- **Which**: the user's own turns (role ``user``) of the channels extraction reads
  (``DREAMING_CHANNELS``), voice tags stripped as the transcript strips them — what recall
  quotes — control and invisible characters removed; an empty turn is not indexed.
- **Label**: the most sensitive (``SENSITIVITY_ORDER``) of the offline labeller's label for
  the turn's text and the labels of the memories that cite it (``source_seqs``: at extraction,
  every candidate the model cited it for, kept or not — a dropped candidate's label still says
  what the turn is about). A turn with any label its user withheld (``forget --sensitive``) is
  not indexed.
- **Status**, from the memory guard's verdict on the turn (:func:`screen_texts` with
  ``turns``): a turn the rules or the secret checks reject is not indexed at all; one the
  meaning layer (or its second opinion) rejects is indexed ``quarantined`` (never read); while
  the meaning layer has no model, ``unscreened`` (never read until ``eros.screen_unscreened``
  judges it); otherwise ``current``.

Counts only leave this module, never text.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from eros.core.sensitivity import most_sensitive
from eros.core.statuses import CURRENT, TurnStatus
from eros.core.text import clean_text, strip_invisible
from eros.core.transcript import Turn
from eros.guard.core.guard import Verdict
from eros.guard.services.guard_model import Screening
from eros.memory.core.channels import VOICE, readable_turns, strip_voice_tags
from eros.memory.core.parsing import Candidate
from eros.memory.core.provenance import resolve_sources
from eros.ops import metrics
from eros.providers.offline.sensitivity import sensitivity_label
from eros.recall.db.turns_sql import TurnRow

#: the guard layers whose rejection still indexes the turn, ``quarantined`` (judged by
#: meaning: kept as evidence of what was refused, never read); the rules', the secret
#: checks' and the length cap's rejection leave it out altogether.
QUARANTINING_LAYERS = frozenset({"meaning", "llm"})


@dataclass(frozen=True)
class TurnText:
    """One user turn to index: its message's ``seq``, when it was said, the text judged."""

    seq: int
    said_at: datetime
    text: str
    #: every label that applies (the offline labeller's, the citing memories'); none = set()
    labels: frozenset[str] = frozenset()

    @property
    def sensitivity(self) -> str | None:
        return most_sensitive(self.labels)


@dataclass
class TurnCounts:
    """What became of a batch of turns: counts by status and by reason, never text."""

    read: int = 0
    withheld: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)

    def as_detail(self) -> dict[str, Any]:
        return {"turns_read": self.read, "turns_indexed": sum(self.statuses.values()),
                "turns_quarantined": self.statuses["quarantined"],
                "turns_unscreened": self.statuses["unscreened"],
                "turns_withheld": self.withheld, "turns_dropped": dict(self.dropped)}


def user_turns(turns: Sequence[Turn], channels: Collection[str]) -> list[TurnText]:
    """The user's readable turns (voice tags stripped), without empty ones, in order."""
    out = []
    for turn in readable_turns(turns, channels):
        if turn.role != "user":
            continue
        text = _cleaned(turn.content)
        if text:
            out.append(TurnText(turn.seq, turn.sent_at, text))
    return out


def judged_text(content: str, channel: str) -> str:
    """A stored message's text as :func:`user_turns` judges and embeds it."""
    return _cleaned(strip_voice_tags(content) if channel == VOICE else content)


def _cleaned(content: str) -> str:
    return strip_invisible(clean_text(content)).strip()


def status_of(verdict: Verdict, pending: bool) -> TurnStatus | None:
    """A turn's status from the guard's verdict on it; None: not indexed (the rules, the
    secret checks or the length cap rejected it)."""
    if verdict.ok:
        return "unscreened" if pending else CURRENT
    if verdict.layer in QUARANTINING_LAYERS:
        return "quarantined"
    return None


def cited_labels(candidates: Iterable[Candidate], window: Sequence[int]) -> dict[int, set[str]]:
    """Each seq's labels from the labelled candidates citing it (their resolved sources,
    the window for a missing citation, as the memory's ``source_seqs``)."""
    out: dict[int, set[str]] = {}
    for candidate in candidates:
        if candidate.sensitivity is None:
            continue
        for seq in resolve_sources(candidate.sources, window).seqs:
            out.setdefault(seq, set()).add(candidate.sensitivity)
    return out


def labelled(turns: Iterable[TurnText], cited: Mapping[int, Iterable[str]],
             withheld: Collection[str]) -> tuple[list[TurnText], int]:
    """The turns with their labels (offline labeller + ``cited``), without the ones carrying
    a withheld label; how many those were."""
    kept, dropped = [], 0
    for turn in turns:
        labels = {*cited.get(turn.seq, ())}
        own = sensitivity_label(turn.text)
        if own is not None:
            labels.add(own)
        if labels & set(withheld):
            dropped += 1
            continue
        kept.append(TurnText(turn.seq, turn.said_at, turn.text, frozenset(labels)))
    return kept, dropped


def turn_rows(turns: Sequence[TurnText], screening: Screening, offset: int, *,
              session_of: Mapping[int, tuple[uuid.UUID, uuid.UUID, uuid.UUID | None]],
              counts: TurnCounts) -> list[TurnRow]:
    """The rows to write for ``turns``, judged at ``screening.verdicts[offset:]`` with their
    vectors; ``session_of[seq]`` is (session, user, persona). Counts the drops."""
    rows = []
    model = screening.embeddings.model if screening.embeddings is not None else ""
    for j, turn in enumerate(turns):
        verdict = screening.verdicts[offset + j]
        vector = screening.vectors.get(offset + j)
        status = status_of(verdict, screening.pending)
        if status is None:
            counts.dropped[verdict.reason or "unknown"] += 1
            continue
        if vector is None:  # not embedded (no call was needed): nothing to index
            continue
        session_id, user_id, instance_id = session_of[turn.seq]
        rows.append(TurnRow(turn.seq, session_id, user_id, instance_id, turn.said_at,
                            vector, model, turn.sensitivity, status))
    return rows


def record(source: str, counts: TurnCounts) -> None:
    """The metrics of turns written (``eros_turns_indexed_total{source,status}``) and of the
    guard's drops (``eros_guard_dropped_total{stage="turn"}``)."""
    metrics.record_turns_indexed(source, dict(counts.statuses))
    metrics.record_guard_drops("turn", dict(counts.dropped))
