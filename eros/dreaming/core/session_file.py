"""The JSONL session format (``eros/data/README.md``): validation of one line at a time.

Pure: bytes in, a :class:`SessionIn` or a one-line error out, so ``eros ingest`` can report
every bad line by number and keep going, and tests need no database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, model_validator


class MessageIn(BaseModel):
    """One turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant"]
    content: str
    sent_at: AwareDatetime


class SessionIn(BaseModel):
    """One line of a session file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: UUID
    user_id: UUID
    #: required but may be null ("no particular persona").
    instance_id: UUID | None
    last_active_at: AwareDatetime | None = None
    messages: list[MessageIn] = Field(min_length=1)

    @model_validator(mode="after")
    def _active_after_messages(self) -> SessionIn:
        if self.last_active_at is not None and self.last_active_at < self.newest_message:
            raise ValueError("last_active_at is earlier than the last message's sent_at")
        return self

    @property
    def newest_message(self) -> datetime:
        return max(m.sent_at for m in self.messages)

    @property
    def active_at(self) -> datetime:
        """``last_active_at``, defaulting to the last message's ``sent_at``."""
        return self.last_active_at or self.newest_message

    @property
    def started_at(self) -> datetime:
        return min(m.sent_at for m in self.messages)

    def shifted(self, delta: timedelta) -> SessionIn:
        """The same session moved in time by ``delta`` (``--shift-to-now``)."""
        messages = [m.model_copy(update={"sent_at": m.sent_at + delta}) for m in self.messages]
        last = self.last_active_at + delta if self.last_active_at else None
        return self.model_copy(update={"messages": messages, "last_active_at": last})


@dataclass(frozen=True)
class BadLine:
    """A line that is not a valid session, with the reason in one line."""

    lineno: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.lineno}: {self.reason}"


def describe(err: ValidationError) -> str:
    """``messages.0.role: Input should be 'user' or 'assistant'; ...``"""
    parts = []
    for e in err.errors(include_url=False):
        loc = ".".join(str(x) for x in e["loc"])
        msg = str(e["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def parse_line(lineno: int, raw: bytes) -> SessionIn | BadLine:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return BadLine(lineno, f"not UTF-8 ({err.reason} at byte {err.start})")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        return BadLine(lineno, f"invalid JSON: {err.msg} (column {err.colno})")
    if not isinstance(document, dict):
        return BadLine(lineno, f"expected a JSON object, got {type(document).__name__}")
    try:
        return SessionIn.model_validate(document)
    except ValidationError as err:
        return BadLine(lineno, describe(err))


def iter_sessions(lines: Iterable[bytes]) -> Iterator[SessionIn | BadLine]:
    """Every non-blank line as a session or a bad line; a repeated ``session_id`` is bad."""
    seen: dict[UUID, int] = {}
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        item = parse_line(lineno, raw)
        if isinstance(item, SessionIn):
            first = seen.setdefault(item.session_id, lineno)
            if first != lineno:
                item = BadLine(lineno, f"session_id: duplicate of line {first}")
        yield item
