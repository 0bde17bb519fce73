"""Load a session file into the chat tables: validate every line, keep going past bad ones,
insert in chunks (one transaction each), never duplicate a session already present."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Literal

from sqlalchemy import Engine

from eros.dreaming.core.session_file import BadLine, SessionIn, iter_sessions
from eros.dreaming.db.loading import insert_sessions

#: ``always``: move every session so the newest ends :data:`SHIFT_GAP` ago; ``if-recent``:
#: only when the newest would otherwise not be idle yet (the demo); ``never``: as written.
Shift = Literal["never", "always", "if-recent"]
SHIFT_GAP = timedelta(hours=1)
CORPUS = "sample_corpus.jsonl"

LineSource = Callable[[], Iterable[bytes]]


@dataclass
class IngestReport:
    valid: int = 0
    inserted: int = 0
    messages: int = 0
    skipped: int = 0
    bad: list[BadLine] = field(default_factory=list)
    shifted_by: timedelta | None = None


def corpus_lines() -> Iterable[bytes]:
    """The bundled sample corpus (``eros/data/sample_corpus.jsonl``)."""
    with resources.files("eros.data").joinpath(CORPUS).open("rb") as handle:
        yield from handle


def file_lines(path: str) -> LineSource:
    def lines() -> Iterable[bytes]:
        with open(path, "rb") as handle:
            yield from handle
    return lines


def _shift_for(source: LineSource, mode: Shift, now: datetime) -> timedelta | None:
    if mode == "never":
        return None
    newest = max((s.active_at for s in iter_sessions(source()) if isinstance(s, SessionIn)),
                 default=None)
    if newest is None:
        return None
    target = now - SHIFT_GAP
    if mode == "if-recent" and newest <= target:
        return None
    return target - newest


def ingest(engine: Engine, source: LineSource, *, shift: Shift = "never", chunk: int = 500,
           on_bad: Callable[[BadLine], None] | None = None,
           now: datetime | None = None) -> IngestReport:
    """Validate and load every line of ``source``; bad lines are reported, not fatal.

    Shifting needs the newest timestamp first, so it reads the source twice.
    """
    report = IngestReport(shifted_by=_shift_for(source, shift, now or datetime.now(UTC)))
    batch: list[SessionIn] = []

    def flush() -> None:
        if batch:
            with engine.begin() as conn:
                loaded = insert_sessions(conn, batch)
            report.inserted += loaded.sessions
            report.messages += loaded.messages
            report.skipped += loaded.skipped
            batch.clear()

    for item in iter_sessions(source()):
        if isinstance(item, BadLine):
            report.bad.append(item)
            if on_bad is not None:
                on_bad(item)
            continue
        report.valid += 1
        batch.append(item.shifted(report.shifted_by) if report.shifted_by else item)
        if len(batch) >= chunk:
            flush()
    flush()
    return report
