"""Turning recorded token counts into money with a configurable price table."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens."""

    llm_input: float = 1.0
    llm_output: float = 5.0
    embedding: float = 0.02


def cost_usd(prices: Prices, *, prompt_tokens: int, completion_tokens: int,
             embedding_tokens: int, llm_offline: bool = False,
             embedder_offline: bool = False) -> float:
    """The cost of one attempt; offline providers are free."""
    llm = 0.0 if llm_offline else (prompt_tokens * prices.llm_input
                                   + completion_tokens * prices.llm_output)
    embed = 0.0 if embedder_offline else embedding_tokens * prices.embedding
    return round((llm + embed) / 1_000_000, 8)
