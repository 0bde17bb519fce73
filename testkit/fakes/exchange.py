"""What the fake HTTP API servers exchange with a test: a scripted :class:`Fault` (consumed by
one incoming API request), the :class:`RecordedRequest` a server keeps of every request, and
the :class:`Response` a handler returns."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

FaultKind = Literal["ok", "status", "drop", "hang", "delay", "raw", "echo"]


@dataclass(frozen=True)
class Fault:
    """One scripted outcome, consumed by exactly one incoming API request."""

    kind: FaultKind
    status_code: int = 200
    retry_after: float | None = None
    message: str | None = None
    seconds: float = 0.0
    body: str | None = None
    content_type: str = "application/json"

    @classmethod
    def ok(cls) -> Fault:
        """Handle the request normally (useful as a placeholder in a script)."""
        return cls("ok")

    @classmethod
    def status(
        cls, status_code: int, retry_after: float | None = None, message: str | None = None
    ) -> Fault:
        """Reply with a provider-shaped error body; 429 always carries ``Retry-After``."""
        return cls("status", status_code=status_code, retry_after=retry_after, message=message)

    @classmethod
    def echo(cls, status_code: int = 400) -> Fault:
        """Reply with an error whose message quotes the request body, as some
        OpenAI-compatible servers do (a client must not store or log it)."""
        return cls("echo", status_code=status_code)

    @classmethod
    def drop(cls) -> Fault:
        """Close the socket without sending any response (client sees a connection error)."""
        return cls("drop")

    @classmethod
    def hang(cls, seconds: float = 10.0) -> Fault:
        """Sleep ``seconds`` (choose > client timeout), then close without responding."""
        return cls("hang", seconds=seconds)

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Sleep ``seconds`` and then handle the request normally."""
        return cls("delay", seconds=seconds)

    @classmethod
    def raw(cls, status_code: int, body: str, content_type: str = "application/json") -> Fault:
        """Reply with an arbitrary body (e.g. malformed JSON with a 200)."""
        return cls("raw", status_code=status_code, body=body, content_type=content_type)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fault:
        return cls(**data)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # header names lower-cased
    body: Any  # parsed JSON, or None when the body is empty / not JSON
    raw_body: bytes
    received_at: float


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
        return cls(status, json.dumps(payload).encode(), "application/json", dict(headers or {}))
