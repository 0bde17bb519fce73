"""Rendering the ``fused`` strategy's answer, pure: memories and the user's own turns in one
prompt section, within a token budget (docs/recall.md, "Fused").

The memories render exactly as :func:`eros.recall.core.render.render_memories` renders them (header,
one section per category, one quoted note a bullet). The turns follow under their own header,
which says what they are — the user's words, quoted as said, not instructions — one line a
turn: who said it and when, and the turn as a quoted note under the same quoting rules as a
memory (one line, invisible and bidi characters removed, the label set's quote characters
swapped inside, so no turn can open a line, a heading or a role, or close its own quotes).
A turn is always dated: "what the user said, when" is the point of quoting it.

**The budget is honoured**: items are taken in rank order while the whole section, as
rendered, stays within ``budget`` tokens (an item that would pass it is skipped and the next
ones still get their chance); the header lines are counted too. What is left is spent on
quotes: under a memory, the turn it came from (``quotes``), rank order first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from eros.core.names import DEFAULT_LABELS, LabelSet
from eros.core.text import estimate_tokens, normalise_for_dedup
from eros.recall.core.fusion import FusedItem
from eros.recall.core.render import (
    Labels,
    bullet,
    crisis_mark,
    get_labels,
    group_by_category,
    prune_duplicates_marked,
    quote_note,
)

Tokens = Callable[[str], int]


def kind_of(item: object) -> str:
    """``memory`` or ``turn`` (an item without a ``kind`` is a memory)."""
    return str(getattr(item, "kind", "memory"))


def _when(item: object, labels: Labels) -> str:
    said = getattr(item, "said_at", None)
    return labels.said_dated.format(date=said.date().isoformat()) \
        if isinstance(said, datetime) else ""


def turn_line(turn: Any, labels: Labels) -> str:
    """One turn: who said it, when, and what, quoted (a ``crisis`` turn is marked first)."""
    line = labels.said.format(when=_when(turn, labels), quote=quote_note(turn.content, labels))
    mark = crisis_mark(getattr(turn, "sensitivity", None), labels)
    return labels.bullet + mark + line.removeprefix(labels.bullet) if mark else line


def quote_line(turn: Any, labels: Labels) -> str:
    """A memory's quote: the turn it came from, under its bullet."""
    return labels.quote_line.format(when=_when(turn, labels),
                                    quote=quote_note(turn.content, labels))


def _compose(items: Sequence[Any], quotes: dict[int, list[Any]], labels: Labels,
             dated: bool) -> str:
    memories = [i for i in items if kind_of(i) == "memory"]
    marked = [(m, mark) for m, mark in prune_duplicates_marked(memories)
              if " ".join(m.content.split())]
    seen: set[str] = set()
    turns = []
    for t in items:
        key = normalise_for_dedup(t.content) or t.content
        if kind_of(t) == "turn" and " ".join(t.content.split()) and key not in seen:
            seen.add(key)
            turns.append(t)
    if not marked and not turns:
        return labels.empty
    sections: list[str] = []
    if marked:
        if labels.header:
            sections.append(labels.header)
        marks = {id(m): mark for m, mark in marked}
        for category, members in group_by_category([m for m, _ in marked]):
            lines = [labels.heading.format(label=labels.label(category))]
            for m in members:
                lines.append(bullet(m, labels, dated=dated, sensitivity=marks[id(m)]))
                lines += [quote_line(q, labels) for q in quotes.get(id(m), [])]
            sections.append("\n".join(lines))
    if turns:
        sections.append("\n".join([labels.turns_header, *(turn_line(t, labels)
                                                          for t in turns)]))
    return "\n\n".join(sections)


def render_fused(items: Sequence[Any], labels: LabelSet | str | Labels = DEFAULT_LABELS, *,
                 dated: bool = False, budget: int | None = None,
                 tokens: Tokens = estimate_tokens) -> str:
    """The prompt section for a fused answer (``items`` in rank order: memories and turns,
    told apart by their ``kind``), at most ``budget`` tokens as ``tokens`` counts them
    (None: no budget). The empty-state line when nothing fits."""
    chosen_labels = get_labels(labels)

    def fits(text: str) -> bool:
        return budget is None or tokens(text) <= budget

    chosen: list[Any] = []
    for item in items:
        if fits(_compose([*chosen, item], {}, chosen_labels, dated)):
            chosen.append(item)
    quotes: dict[int, list[Any]] = {}
    for item in chosen:
        for q in getattr(item, "quotes", ()) or ():
            trial = {**quotes, id(item): [*quotes.get(id(item), []), q]}
            if fits(_compose(chosen, trial, chosen_labels, dated)):
                quotes = trial
    return _compose(chosen, quotes, chosen_labels, dated)


def within_budget(items: Sequence[FusedItem], budget: int | None,
                  cost: Callable[[FusedItem], int], limit: int | None = None) -> list[FusedItem]:
    """The items, in rank order, whose ``cost`` fits in ``budget`` (None: no budget): an item
    that would pass it is left out and the next ones still get their chance, so one long turn
    never empties the rest of the section. ``limit``: at most that many (the first ones kept,
    the rest never priced: rendering an item to count its tokens is most of the cost)."""
    if budget is None:
        return list(items)[:limit]
    out: list[FusedItem] = []
    spent = 0
    for item in items:
        if limit is not None and len(out) >= limit:
            break
        price = cost(item)
        if spent + price <= budget:
            out.append(item)
            spent += price
    return out
