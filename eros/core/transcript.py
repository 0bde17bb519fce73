"""Building the transcript the model reads, within a budget that keeps the newest turns.

A numbered transcript (prompts that ask for citations, ``extract_v3`` on) starts every kept
turn with ``[n]``: n = 1, 2, … in transcript order, over the turns the model is shown (trimmed
turns get no number). :attr:`Transcript.seqs` maps them back — turn n is
``chat_messages.seq`` ``seqs[n - 1]`` — and :mod:`eros.memory.core.provenance` resolves a reply's
citations with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from eros.core.text import clean_text

EXTRACTED_ROLES = ("user", "assistant")
_HEADER_RESERVE = 200
_TRIM_NOTE = "[{n} earlier turns omitted]"
#: the first line of a turn: ``role: text``, or ``[n] role: text`` in a numbered transcript.
_TURN_LINE = re.compile(r"^(?:\[(\d+)\] )?(user|assistant)\s*:\s?(.*)$", re.IGNORECASE)


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


@dataclass(frozen=True)
class ReadTurn:
    """A turn read back from a transcript's text (:func:`read_turns`)."""

    #: ``[n]`` of a numbered transcript; None in a plain one.
    number: int | None
    role: str
    text: str


def read_turns(text: str) -> list[ReadTurn]:
    """The turns of a transcript as :func:`build_transcript` writes it (the header, trim note
    or anything else around it is skipped): what a reply-writer that sees only the text — the
    offline extractor, the LoCoMo observation replay — needs to cite turns by number.

    A turn is a ``role:`` line plus its two-space continuation lines (joined with newlines);
    any other line ends it, so text around a transcript is never credited to a speaker.
    """
    turns: list[ReadTurn] = []
    current: tuple[int | None, str, list[str]] | None = None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for line in [*lines, ""]:  # the final "" flushes a turn still open at the end
        if line.startswith("  "):  # continuation, even a blank one inside a message
            if current is not None and line.strip():
                current[2].append(line.strip())
            continue
        if current is not None:
            turns.append(ReadTurn(current[0], current[1], "\n".join(current[2])))
            current = None
        match = _TURN_LINE.match(line)
        if match:
            number = int(match.group(1)) if match.group(1) else None
            current = (number, match.group(2).lower(), [match.group(3).strip()])
    return turns
