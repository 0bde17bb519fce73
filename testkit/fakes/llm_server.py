"""Fake OpenAI-compatible chat-completions server (``POST /v1/chat/completions``).

Replies come from a pluggable ``responder(request_json) -> Reply``.  The default,
:func:`echo_memories_responder`, turns ``MEM <category> <importance> <content>``
lines of the last user message into ``{"memories": [...]}`` and honours the
directive tokens ``REPLY_GARBAGE``, ``REPLY_TRUNCATE``, ``REPLY_FENCED``,
``REPLY_EMPTY`` and ``SLOW <ms>``.

Standalone: ``python -m testkit.fakes.llm_server --port 0 --latency-ms 300 --port-file /tmp/x``.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from testkit.fakes.http_base import FakeHTTPServer, RecordedRequest, Response, serve_main

__all__ = [
    "FakeLLMServer",
    "Reply",
    "Responder",
    "echo_memories_responder",
    "estimate_tokens",
    "extract_memories",
    "last_user_text",
]

TRUNCATE_MIN_BUDGET = 4000  # REPLY_TRUNCATE is ignored when max_tokens >= this

_MEM_RE = re.compile(
    r"^(?P<prefix>.{0,80}?)\bMEM\s+(?P<category>\S+)\s+"
    r"(?P<importance>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s+(?P<content>\S.*?)\s*$"
)
_ASSISTANT_PREFIX_RE = re.compile(r"\bassistant\s*:\s*$", re.IGNORECASE)
_TURN_NUMBER_RE = re.compile(r"^\[(\d+)\]\s")
_SLOW_RE = re.compile(r"\bSLOW\s+(\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class Reply:
    """What the fake model answers. Token counts default to ``len(text) // 4``."""

    content: str
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    delay: float = 0.0  # seconds to sleep before answering


Responder = Callable[[dict[str, Any]], Reply]


def estimate_tokens(text: str) -> int:
    return len(text) // 4


def message_text(message: Any) -> str:
    """Text of a chat message whose content is a string or a list of content parts."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(str(p.get("text", "")) for p in parts)
    return ""


def last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message)
    return ""


def extract_memories(text: str) -> list[dict[str, Any]]:
    """Parse ``[speaker: ]MEM <category> <importance> <content...>`` lines.

    Lines spoken by the assistant (prefix ending in ``assistant:``) are ignored. In a numbered
    transcript (``[3] user: MEM …``, prompts from extract_v3 on) the memory cites its turn:
    ``"sources": [3]``, as a model following the prompt would.
    """
    memories: list[dict[str, Any]] = []
    for line in text.splitlines():
        m = _MEM_RE.match(line)
        if m is None:
            continue
        prefix = m.group("prefix")
        if prefix.strip() and not prefix.rstrip().endswith(":"):
            continue  # MEM in the middle of prose, not a directive line
        if _ASSISTANT_PREFIX_RE.search(prefix):
            continue
        memory: dict[str, Any] = {
            "content": m.group("content"),
            "category": m.group("category"),
            "importance": float(m.group("importance")),
        }
        turn = _TURN_NUMBER_RE.match(prefix)
        if turn is not None:
            memory["sources"] = [int(turn.group(1))]
        memories.append(memory)
    return memories


def _budget(request: dict[str, Any]) -> int:
    values = [request.get("max_tokens"), request.get("max_completion_tokens")]
    return max((int(v) for v in values if isinstance(v, int | float)), default=0)


def echo_memories_responder(request: dict[str, Any]) -> Reply:
    """Default responder: echo ``MEM`` lines of the last user message as JSON memories."""
    text = last_user_text(request)
    slow = _SLOW_RE.search(text)
    delay = float(slow.group(1)) / 1000.0 if slow else 0.0
    if "REPLY_GARBAGE" in text:
        return Reply("Sure! I found some memories, but here they are as prose {oops", delay=delay)
    memories = [] if "REPLY_EMPTY" in text else extract_memories(text)
    content = json.dumps({"memories": memories}, ensure_ascii=False)
    if "REPLY_FENCED" in text:
        content = (
            f"Here are the memories I extracted:\n\n```json\n{content}\n```\n\n"
            "Let me know if you need anything else."
        )
    budget = _budget(request)
    if "REPLY_TRUNCATE" in text and budget < TRUNCATE_MIN_BUDGET:
        return Reply(
            content[: max(1, len(content) // 2)],
            "length",
            completion_tokens=budget or None,
            delay=delay,
        )
    return Reply(content, delay=delay)


def _error_kind(status: int) -> tuple[str, str | None]:
    codes = {
        401: "invalid_api_key",
        404: "not_found",
        429: "rate_limit_exceeded",
        503: "service_unavailable",
    }
    if status == 429:
        kind = "requests"
    elif status == 401:
        kind = "authentication_error"
    elif status >= 500:
        kind = "server_error"
    else:
        kind = "invalid_request_error"
    return kind, codes.get(status)


class FakeLLMServer(FakeHTTPServer):
    """OpenAI chat-completions fake. ``responder`` defaults to :func:`echo_memories_responder`."""

    api_paths = ("/v1/chat/completions", "/chat/completions")

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(host=host, port=port, latency=latency, seed=seed)
        self._responder: Responder = responder or echo_memories_responder
        self._replies: deque[Reply] = deque()

    def set_responder(self, responder: Responder | None) -> None:
        with self._lock:
            self._responder = responder or echo_memories_responder

    def script_replies(self, replies: Iterable[Reply]) -> None:
        """Override the responder for the next N successfully-routed requests."""
        with self._lock:
            self._replies.extend(replies)

    def reset(self) -> None:
        with self._lock:
            super().reset()
            self._replies.clear()

    def configure(self, cfg: dict[str, Any]) -> None:
        super().configure(cfg)
        if "replies" in cfg:
            self.script_replies(Reply(**r) for r in cfg["replies"])

    def error_body(self, status: int, message: str) -> Any:
        kind, code = _error_kind(status)
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def handle(self, req: RecordedRequest) -> Response | None:
        body: dict[str, Any] = req.body
        if body.get("stream"):
            return self._error(400, "stream=true is not supported by the fake LLM server")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return self._error(400, "'messages' must be a non-empty array")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return self._error(400, "'model' is required")
        with self._lock:
            scripted = self._replies.popleft() if self._replies else None
            responder = self._responder
        reply = scripted if scripted is not None else responder(body)
        self.sleep(reply.delay)
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = sum(estimate_tokens(message_text(m)) for m in messages)
        completion_tokens = reply.completion_tokens
        if completion_tokens is None:
            completion_tokens = estimate_tokens(reply.content)
        n = self.next_id()
        payload = {
            "id": f"chatcmpl-fake{n:08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": "fp_fake",
        }
        return Response.of_json(200, payload, {"x-request-id": f"req_fake_{n}"})


def main(argv: Sequence[str] | None = None) -> int:
    def factory(args: argparse.Namespace) -> FakeHTTPServer:
        return FakeLLMServer(
            host=args.host, port=args.port, latency=args.latency_ms / 1000.0, seed=args.seed
        )

    return serve_main("fake-llm-server", factory, argv)


if __name__ == "__main__":
    raise SystemExit(main())
