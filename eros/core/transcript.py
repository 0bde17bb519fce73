"""Building the transcript the model reads, within a budget that keeps the newest turns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from eros.core.text import clean_text

EXTRACTED_ROLES = ("user", "assistant")
_HEADER_RESERVE = 200
_TRIM_NOTE = "[{n} earlier turns omitted]"


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    sent_at: datetime
    seq: int
    #: ``chat_messages.channel``; core/channels.py decides which are read.
    channel: str = "text"


@dataclass(frozen=True)
class Transcript:
    text: str
    turns_kept: int
    turns_trimmed: int
    first_seq: int
    last_seq: int

    @property
    def empty(self) -> bool:
        return self.turns_kept == 0


def format_turn(turn: Turn) -> str:
    """``role: text``; continuation lines are indented so each turn starts its own line."""
    body = clean_text(turn.content).strip()
    return f"{turn.role}: " + body.replace("\n", "\n  ")


def build_transcript(turns: Sequence[Turn], *, budget_chars: int) -> Transcript:
    """Keep the most recent user/assistant turns that fit in ``budget_chars``.

    Trimming is deliberate: an oversized session is never sent over the model's context. The
    newest turns are kept because a resumed session's new part is what has not been read yet
    and recent context matters most; a single turn larger than the budget is cut at its end.
    The header carries the session's date so "last Saturday" can be resolved.
    """
    usable = [t for t in turns if t.role in EXTRACTED_ROLES and clean_text(t.content).strip()]
    if not usable:
        return Transcript("", 0, 0, 0, 0)
    first, last = usable[0].sent_at, usable[-1].sent_at
    header = f"Session date: {last:%Y-%m-%d} ({last:%A})"
    if first.date() != last.date():
        header = f"Session dates: {first:%Y-%m-%d} to {last:%Y-%m-%d} ({last:%A})"
    room = max(budget_chars - len(header) - _HEADER_RESERVE, 100)
    kept: list[str] = []
    for turn in reversed(usable):
        line = format_turn(turn)
        if len(line) + 1 > room:
            if not kept:
                kept.append(line[: room - 2] + " …")
            break
        kept.append(line)
        room -= len(line) + 1
    kept.reverse()
    trimmed = len(usable) - len(kept)
    lines = [header, "---"]
    if trimmed:
        lines.append(_TRIM_NOTE.format(n=trimmed))
    lines.extend(kept)
    return Transcript("\n".join(lines), len(kept), trimmed, usable[0].seq, usable[-1].seq)
