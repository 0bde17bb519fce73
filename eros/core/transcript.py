"""Building the transcript the model reads, within a budget that keeps the newest turns.

A numbered transcript (prompts that ask for citations, ``extract_v3`` on) starts every kept
turn with ``[n]``: n = 1, 2, … in transcript order, over the turns the model is shown (trimmed
turns get no number). :attr:`Transcript.seqs` maps them back — turn n is
``chat_messages.seq`` ``seqs[n - 1]`` — and :mod:`eros.core.provenance` resolves a reply's
citations with it.
"""

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
    #: the ``chat_messages.seq`` of every turn shown, in order: turn number n is seqs[n - 1].
    #: This is the extraction window a memory without a valid citation falls back to.
    seqs: tuple[int, ...] = ()

    @property
    def empty(self) -> bool:
        return self.turns_kept == 0


def format_turn(turn: Turn, number: int | None = None) -> str:
    """``role: text`` (``[n] role: text`` when numbered); continuation lines are indented so
    each turn starts its own line and no text a user types can start a line of its own."""
    body = clean_text(turn.content).strip()
    label = "" if number is None else f"{turn_label(number)} "
    return f"{label}{turn.role}: " + body.replace("\n", "\n  ")


def turn_label(number: int) -> str:
    """How turn ``number`` is written at the start of its line: ``[number]``."""
    return f"[{number}]"


def build_transcript(turns: Sequence[Turn], *, budget_chars: int,
                     numbered: bool = False) -> Transcript:
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
    # the budget is measured with the widest label the session could need, so the numbers
    # (given once the kept turns are known) never push the text over it
    label_room = len(turn_label(len(usable))) + 1 if numbered else 0
    kept: list[Turn] = []
    cut: str | None = None  # the single oversized turn, cut at its end
    for turn in reversed(usable):
        size = len(format_turn(turn)) + label_room
        if size + 1 > room:
            if not kept:
                kept.append(turn)
                cut = format_turn(turn)[: room - 2 - label_room] + " …"
            break
        kept.append(turn)
        room -= size + 1
    kept.reverse()
    trimmed = len(usable) - len(kept)
    lines = [header, "---"]
    if trimmed:
        lines.append(_TRIM_NOTE.format(n=trimmed))
    for number, turn in enumerate(kept, start=1):
        line = format_turn(turn) if cut is None else cut
        if numbered:
            line = f"{turn_label(number)} {line}"
        lines.append(line)
    return Transcript("\n".join(lines), len(kept), trimmed, usable[0].seq, usable[-1].seq,
                      tuple(t.seq for t in kept))
