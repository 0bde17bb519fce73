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

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
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
                tokens: Callable[[str], int] = estimate_tokens) -> list[T]:
    """``items`` (ranked) with the memories after the first ``after`` moved before the turns
    after them, when the memory ``pool``'s texts (default: those memories) render within
    ``max_tokens`` (a line each). A costlier pool: unchanged."""
    if len(items) <= after:
        return list(items)
    head, rest = list(items[:after]), items[after:]
    memories = [i for i in rest if i.kind == "memory"]
    texts = pool if pool is not None else [i.content for i in memories]
    if sum(tokens(t) + 1 for t in texts) > max_tokens:
        return list(items)
    return head + memories + [i for i in rest if i.kind != "memory"]


def leading_turns(items: Sequence[T], most: int) -> int:
    """How many turns open ``items`` (ranked above every memory), at most ``most``."""
    return next((i for i, item in enumerate(items[:most]) if item.kind == "memory"), most)


def memory_window(items: Sequence[T], head: int, max_tokens: int,
                  tokens: Callable[[T], int]) -> list[T]:
    """``items`` (ranked) with the memories after the first ``head`` that render within
    ``max_tokens`` together (each ``tokens``, in their own order, the first that would pass
    the window ends it) moved right after the head; everything else keeps its order.
    ``max_tokens`` 0: unchanged. Unlike :func:`memory_tail` it does not ask the pool's size:
    a large pool's best memories get the window, its other memories stay where they rank."""
    if max_tokens <= 0 or len(items) <= head:
        return list(items)
    window: list[int] = []
    spent = 0
    for index in range(head, len(items)):
        if items[index].kind != "memory":
            continue
        spent += tokens(items[index])
        if spent > max_tokens:
            break
        window.append(index)
    chosen = set(window)
    return [*items[:head], *(items[i] for i in window),
            *(item for i, item in enumerate(items) if i >= head and i not in chosen)]


def arranged(out: list[T], params: Any, pool: Sequence[str],
             price: Callable[[T], int]) -> list[T]:
    """The fused list ``out`` with its far end given to a small memory ``pool`` whole
    (:func:`memory_tail` past ``params.memory_tail_after`` items) and, on a remark
    (:func:`~eros.recall.core.fusion_intent.for_intent` set the fields), its first window to
    the best memories (:func:`memory_window`) right after the turns that lead it — those
    turns at most ``params.lead_tokens`` together (``price`` an item's rendered tokens)."""
    head = params.memory_tail_after
    if head <= 0 or len(out) <= head:
        return out
    if params.memory_tail_at_memory:
        head = leading_turns(out, head)
    if params.lead_tokens > 0:
        spent = 0
        for i in range(head):
            spent += price(out[i])
            if spent > params.lead_tokens:
                head = i
                break
    out = memory_tail(out, head, params.memory_tail_tokens, pool=pool)
    return memory_window(out, head, params.memory_window_tokens, price)


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


def per_token(items: list[Any], weight: float, cost: Callable[[Any], int], *,
              turns_only: bool = False) -> list[Any]:
    """``items`` (scored, not yet sorted) with ``weight × ln(tokens)`` taken from each score
    (``cost`` an item's rendered tokens; 0: unchanged). Read as a value per token: a score
    ``s`` stands for a value ``exp(s / weight)``, so ordering by ``s − weight · ln(tokens)``
    orders by value per token. ``turns_only``: only a turn pays, ``weight × ln(its tokens /
    the memories' median tokens)`` when it is the longer."""
    if weight <= 0:
        return items
    if not turns_only:
        return [replace(i, score=i.score - weight * math.log(max(1, cost(i)))) for i in items]
    sizes = sorted(cost(i) for i in items if i.kind == "memory")
    if not sizes:
        return items
    ref = max(1, sizes[len(sizes) // 2])
    return [replace(i, score=i.score - weight * max(0.0, math.log(max(1, cost(i)) / ref)))
            if i.kind == "turn" else i for i in items]
