"""The two outside capabilities eros needs, as protocols with plain-data results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

InputType = Literal["document", "query"]


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def truncated(self) -> bool:
        """The reply was cut off at ``max_tokens``."""
        return self.finish_reason == "length"


@dataclass(frozen=True)
class Embeddings:
    vectors: list[list[float]]
    total_tokens: int
    model: str


class ChatCompleter(Protocol):
    """One chat-completion call; raises TransientError or PermanentError, nothing else."""

    name: str
    offline: bool

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion: ...


class Embedder(Protocol):
    """One embedding call for many texts; raises TransientError or PermanentError."""

    name: str
    offline: bool

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings: ...
