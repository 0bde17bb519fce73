"""The memory ledger's use cases (``eros ledger``): what a person sees about a user
and the actions they take — through the same services as the CLI and the tasks (forget,
rescreen's restore, export), each action recorded where the CLI's is (``erasure_log``) and,
with every view of a user's ledger, in ``ledger_access_log`` (ids only).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import IO, Any, Literal

from sqlalchemy import Engine

from eros.consolidation.db import lineage_sql
from eros.core.erasure import error_code
from eros.core.names import DEFAULT_LABELS, DEFAULT_SCOPE
from eros.errors import ErosError
from eros.guard.db import guard_sql
from eros.ledger.db import ledger_sql
from eros.privacy.db import erasure_sql
from eros.privacy.services import forget as forget_svc
from eros.privacy.services.erasure import record_failed
from eros.providers.base import Embedder
from eros.recall.core.ranking import STRATEGIES
from eros.settings import Settings

#: the page size of a user's ledger unless asked otherwise, and the largest one allowed.
PAGE_SIZE = 50
MAX_PAGE_SIZE = 200

Action = Literal["view_user", "view_memory", "recall", "export", "forget_memory",
                 "forget_message", "forget_user", "restore"]


def log_access(engine: Engine, action: Action, user_id: uuid.UUID | None,
               object_id: uuid.UUID | None = None) -> None:
    """Record a view or an action before it is served (no record, no page)."""
    with engine.begin() as conn:
        ledger_sql.log_access(conn, action, user_id, object_id)


@dataclass
class Ledger:
    """One page of a user's ledger."""

    user_id: uuid.UUID
    counts: dict[str, dict[str, int]]
    memories: list[dict[str, Any]]
    page: int
    pages: int
    size: int
    category: str | None
    quarantined: list[dict[str, Any]] = field(default_factory=list)
    erasures: list[dict[str, Any]] = field(default_factory=list)
    timeline: list[Any] = field(default_factory=list)

    @property
    def current(self) -> int:
        return sum(self.counts.get("current", {}).values())


def _annotate(conn: Any, user_id: uuid.UUID, rows: list[dict[str, Any]]) -> None:
    """Each memory's quoted source turns and lineage, in two statements for the whole page."""
    stored = ledger_sql.turns(conn, user_id, [s for r in rows for s in r["source_seqs"] or ()])
    lineages = lineage_sql.lineage(conn, user_id, [r["id"] for r in rows])
    for r in rows:
        r["turns"] = [(int(s), stored.get(int(s))) for s in r["source_seqs"] or ()]
        r["lineage"] = lineages.get(r["id"])


def user_ledger(engine: Engine, user_id: uuid.UUID, *, page: int = 1, size: int = PAGE_SIZE,
                category: str | None = None) -> Ledger:
    """Page ``page`` (from 1) of the user's current memories (of ``category``), with their
    sources and lineage; the quarantined memories, the user's erasures and the timeline."""
    size = max(1, min(size, MAX_PAGE_SIZE))
    with engine.connect() as conn:
        counts = ledger_sql.memory_counts(conn, user_id)
        current = counts.get("current", {})
        total = current.get(category, 0) if category else sum(current.values())
        pages = max(1, -(-total // size))
        page = max(1, min(page, pages))
        rows = ledger_sql.memories_page(conn, user_id, category=category, limit=size,
                                        offset=(page - 1) * size)
        quarantined = ledger_sql.held_back(conn, user_id, limit=100)
        _annotate(conn, user_id, rows + quarantined)
        erasures = erasure_sql.list_erasures(conn, user_id, limit=50)
        timeline = ledger_sql.timeline(conn, user_id)
    return Ledger(user_id, counts, rows, page, pages, size, category, quarantined, erasures,
                  timeline)


def memory_detail(engine: Engine, memory_id: uuid.UUID) -> dict[str, Any] | None:
    """One memory (any status) with its sources and lineage; None when it does not exist."""
    with engine.connect() as conn:
        row = ledger_sql.memory(conn, memory_id)
        if row is not None:
            _annotate(conn, row["user_id"], [row])
    return row


def memory_owner(engine: Engine, memory_id: uuid.UUID) -> uuid.UUID | None:
    with engine.connect() as conn:
        row = ledger_sql.memory(conn, memory_id)
    return row["user_id"] if row is not None else None


def message_owner(engine: Engine, message_id: uuid.UUID) -> uuid.UUID | None:
    with engine.connect() as conn:
        return ledger_sql.message_owner(conn, message_id)


def restore_quarantined(engine: Engine, memory_id: uuid.UUID) -> bool:
    """``eros rescreen --restore ID``: a quarantined memory put back in the status it had."""
    with engine.begin() as conn:
        return guard_sql.restore(conn, memory_id)


Erasure = Literal["memory", "message", "user"]


class ErasureFailed(ErosError):
    """The erasure failed and nothing was removed; it is recorded in erasure_log."""

    def __init__(self, code: str, erasure_id: int | None) -> None:
        super().__init__(f"the erasure failed ({code}); nothing was removed (erasure_log id "
                         f"{erasure_id}); try again")
        self.code, self.erasure_id = code, erasure_id


def erase(engine: Engine, what: Erasure, target: uuid.UUID, *,
          sessions: bool = False) -> dict[str, Any]:
    """``eros forget --memory / --message / USER [--sessions]``: the same service calls and
    the same erasure_log rows; a failure is recorded ``failed`` (as the CLI does) and raised
    as :class:`ErasureFailed` (a code and the log row's id: never the database's message)."""
    if what == "memory":
        request = forget_svc.memory_request(target)
    elif what == "message":
        request = forget_svc.message_request()
    else:
        request = forget_svc.user_request(target)
    try:
        if what == "memory":
            return forget_svc.forget_memory(engine, target, request=request)
        if what == "message":
            return forget_svc.forget_message(engine, target, request=request)
        return forget_svc.forget_user(engine, target, sessions=sessions, request=request)
    except Exception as err:
        raise ErasureFailed(error_code(err), record_failed(engine, request, err)) from None


def export(engine: Engine, user_id: uuid.UUID, out: IO[str], *,
           with_messages: bool = False) -> dict[str, int]:
    """``eros export USER`` (eros-export/2) into ``out``."""
    from eros.privacy.services.export import export_user

    return export_user(engine, user_id, out, with_messages=with_messages, version=2)


@dataclass
class Playground:
    """What recall returns for one query under every strategy, and what the page cost."""

    results: list[tuple[Any, str]]
    #: the recall calls themselves, in ms (their own timings' totals, summed)
    recall_ms: float
    #: the whole playground (the calls and what surrounds them), in ms
    total_ms: float


def playground(engine: Engine, embedder: Embedder, settings: Settings, user_id: uuid.UUID,
               query: str, *, instance_id: uuid.UUID | None = None, scope: str = DEFAULT_SCOPE,
               lang: str = DEFAULT_LABELS) -> Playground:
    """``eros recall USER QUERY --strategy S --render LANG`` for every strategy S."""
    from eros.recall.services.recall import recall

    started = time.perf_counter()
    results, recall_ms = [], 0.0
    for strategy in STRATEGIES:
        t = time.perf_counter()
        result = recall(engine, embedder, user_id, query, instance_id=instance_id,
                        scope=scope,  # type: ignore[arg-type]
                        strategy=strategy, settings=settings)
        recall_ms += (time.perf_counter() - t) * 1000
        results.append((result, result.render(lang, dated=settings.recall_render_dates)))
    return Playground(results, recall_ms, (time.perf_counter() - started) * 1000)
