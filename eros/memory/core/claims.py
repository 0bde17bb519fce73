"""A session's claim and attempt, the memory rows a classify writes and the outcome it records:
plain values passed between the classify path, its SQL and its task."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from eros.core.outcomes import OutcomeKind
from eros.core.statuses import CURRENT, MemoryStatus
from eros.core.transcript import Turn


@dataclass(frozen=True)
class Claim:
    session_id: uuid.UUID
    user_id: uuid.UUID
    instance_id: uuid.UUID | None
    token: uuid.UUID


@dataclass(frozen=True)
class Attempt:
    """A claim that is still ours, with the attempt number this run counts as."""

    claim: Claim
    attempt: int
    through_seq: int
    #: the turns past ``through_seq`` and the watermark covering them, when read in the
    #: attempt's own transaction (``begin_attempt(read_turns=True)``); None: not read yet.
    turns: tuple[tuple[Turn, ...], int] | None = None
    #: the special-category labels the user withdrew consent for: candidates with
    #: one of them are not stored. Read with the attempt (no statement of its own).
    withheld: frozenset[str] = frozenset()


@dataclass(frozen=True)
class MemoryRow:
    content: str
    category: str
    importance: float | None
    metadata: dict[str, Any]
    embedding: list[float]
    #: ``profile`` or ``relationship`` (core/layers.py decides the row's instance_id).
    layer: str = "profile"
    #: the model that produced ``embedding`` (recall never ranks two models together).
    embedding_model: str | None = None
    #: the ``chat_messages.seq`` values it came from (sorted, distinct); None = unknown.
    source_seqs: tuple[int, ...] | None = None
    #: the citation was missing or invalid: ``source_seqs`` is the extraction window.
    source_fallback: bool = False
    #: special category (core/sensitivity.py); None = none.
    sensitivity: str | None = None
    #: ``current``, or ``unscreened`` while the guard's meaning layer has no model (0023).
    status: MemoryStatus = CURRENT


@dataclass(frozen=True)
class Outcome:
    """What one run of classify ended with, as recorded on the session and in the runs table."""

    kind: OutcomeKind
    memory_count: int = 0
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    error: str | None = None
    cost_usd: float = 0.0
    #: candidates the memory guard dropped (a count only: their text is never kept).
    guard_dropped: int = 0
