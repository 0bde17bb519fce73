"""What a fused list's items cost, pure (``fused``; docs/recall.md, "Fused"): a turn a shorter
memory cites is returned as that memory (:func:`stand_ins`), and the far end of a list goes to
a small memory pool before the turns (:func:`memory_tail`).

Past its head a fused list is read only by a caller who asks for many items or spends a large
token budget on them; there it is cheaper to give the rest of a small memory pool whole than
to keep interleaving turns. An implicit remark (something said months later that only meaning
links to a confidence) often finds its evidence near the *bottom* of the memory ranking: a
memory-only strategy still reaches it within a budget because a small user's memories are
short lines that all fit, while a fused list spends the same tokens on turns first. So, when
the memory pool as read renders within ``max_tokens``, the memories left after the first
``after`` items go before the turns left after them (each kind in its own order). The head is
untouched (every recall@K up to ``after`` is the ranking's), and a large memory pool (a user
months into a long chat) keeps the ranking as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from eros.core.text import estimate_tokens
from eros.recall.core.fusion_words import cited


class _Item(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def content(self) -> str: ...


T = TypeVar("T", bound=_Item)


def memory_tail(items: Sequence[T], after: int, max_tokens: int, *,
                pool: Sequence[str] | None = None,
                tokens: Callable[[str], int] = estimate_tokens,
                at_memory: bool = False) -> list[T]:
    """``items`` (ranked) with the memories after the first ``after`` moved before the turns
    after them, when the memory ``pool``'s texts (default: those memories) render within
    ``max_tokens`` (a line each); ``at_memory``: after the first memory instead when it comes
    earlier (only the turns that open the list keep their places). ``after`` 0, or a costlier
    pool: unchanged."""
    if after <= 0 or len(items) <= after:
        return list(items)
    if at_memory:
        after = next((i for i, item in enumerate(items[:after]) if item.kind == "memory"),
                     after)
    head, rest = list(items[:after]), items[after:]
    memories = [i for i in rest if i.kind == "memory"]
    texts = pool if pool is not None else [i.content for i in memories]
    if sum(tokens(t) + 1 for t in texts) > max_tokens:
        return list(items)
    return head + memories + [i for i in rest if i.kind != "memory"]


def stand_ins(items: Sequence[Any], cost: Callable[[Any], int] | None
              ) -> dict[int, int]:
    """For each turn of ``items`` (ranked), the index of the best-ranked memory citing it
    that renders shorter than the turn (no ``cost``: any citing memory) — the memory that
    takes the turn's place when ``memory_stands_in``."""
    best: dict[int, int] = {}
    for index, item in enumerate(items):
        if item.memory is not None:
            for seq in cited(item.memory):
                best.setdefault(seq, index)
    out: dict[int, int] = {}
    for item in items:
        if item.turn is None or item.turn.seq not in best:
            continue
        memory = items[best[item.turn.seq]]
        if cost is None or cost(memory) < cost(item):
            out[item.turn.seq] = best[item.turn.seq]
    return out


def remembered(cost: Callable[[Any], int]) -> Callable[[Any], int]:
    """``cost``, counted once per item (an item's line is rendered to be counted)."""
    tokens: dict[str, int] = {}

    def cost_of(item: Any) -> int:
        if item.key not in tokens:
            tokens[item.key] = cost(item)
        return tokens[item.key]
    return cost_of
