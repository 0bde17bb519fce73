"""Provenance: the chat turns a memory came from, as pure functions.

The model reads a numbered transcript (:func:`eros.core.transcript.build_transcript` with
``numbered=True``): the turns it is shown are ``[1]``, ``[2]``, … in order, and turn n is the
``chat_messages.seq`` ``window[n - 1]`` (``Transcript.seqs``). Small numbers, not seqs: they
cost a token or two each, the model cannot confuse them with anything else in the text, and a
citation outside ``1..len(window)`` is plainly invalid.

Each memory of the reply cites its turns in ``"sources"``. :func:`resolve_sources` turns the
citation into seqs; a memory whose citation is missing or invalid gets the whole window and is
flagged (``source_fallback``) — it came from somewhere in what the model read, but we cannot
say where. All or nothing: one number out of range means the model lost track of the
numbering, and the rest of that citation is not trusted either.

:func:`cite` is the inverse, for anything that has to *write* a reply citing turns (the
LoCoMo observation replay of ``eros eval``, tests): seqs in, turn numbers out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Provenance:
    """Where one memory came from: ``chat_messages.seq`` values, sorted and distinct."""

    seqs: tuple[int, ...]
    #: the citation was missing or invalid, so ``seqs`` is the extraction window.
    fallback: bool = False


def seq_of(window: Sequence[int], number: int) -> int | None:
    """The seq of turn ``number`` in a transcript showing ``window``; None if out of range."""
    if isinstance(number, bool) or not 1 <= number <= len(window):
        return None
    return window[number - 1]


def cite(window: Sequence[int], seqs: Iterable[int]) -> list[int]:
    """The turn numbers of ``seqs`` in a transcript showing ``window`` (seqs the transcript
    does not show are left out), sorted and distinct: what a reply's ``"sources"`` holds."""
    number = {seq: n for n, seq in enumerate(window, start=1)}
    return sorted({number[s] for s in seqs if s in number})


def resolve_sources(cited: Sequence[int] | None, window: Sequence[int]) -> Provenance:
    """The seqs a memory citing ``cited`` came from: the cited turns when every number is a
    turn of the window, otherwise (missing, empty or any number out of range) the window
    itself, flagged."""
    if cited:
        seqs = [seq_of(window, n) for n in cited]
        if all(s is not None for s in seqs):
            return Provenance(union(s for s in seqs if s is not None))
    return Provenance(union(window), fallback=True)


def union(seqs: Iterable[int]) -> tuple[int, ...]:
    """Seqs sorted and distinct — the form stored in ``companion_memories.source_seqs``."""
    return tuple(sorted(set(seqs)))


def merged(members: Iterable[Provenance | None]) -> Provenance | None:
    """A consolidated memory's provenance: the union of its members' seqs, flagged when any
    member was a fallback. Members written before provenance (None) add nothing; None when
    every member is such a memory."""
    known = [p for p in members if p is not None]
    if not known:
        return None
    return Provenance(union(s for p in known for s in p.seqs), any(p.fallback for p in known))
