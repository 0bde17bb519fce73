"""Local HTTP fakes of external APIs (OpenAI chat completions, Voyage embeddings).

Re-exports are resolved lazily so that ``python -m testkit.fakes.llm_server`` does not
import the submodule twice (which makes ``runpy`` warn).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testkit.fakes.exchange import Fault, RecordedRequest, Response
    from testkit.fakes.http_base import FakeHTTPServer
    from testkit.fakes.llm_server import (
        FakeLLMServer,
        Reply,
        Responder,
        echo_memories_responder,
        extract_memories,
    )
    from testkit.fakes.voyage_server import FakeVoyageServer, Vectorizer, hash_embedding

_EXPORTS = {
    "FakeHTTPServer": "http_base",
    "Fault": "exchange",
    "RecordedRequest": "exchange",
    "Response": "exchange",
    "FakeLLMServer": "llm_server",
    "Reply": "llm_server",
    "Responder": "llm_server",
    "echo_memories_responder": "llm_server",
    "extract_memories": "llm_server",
    "FakeVoyageServer": "voyage_server",
    "Vectorizer": "voyage_server",
    "hash_embedding": "voyage_server",
}

__all__ = [
    "FakeHTTPServer",
    "FakeLLMServer",
    "FakeVoyageServer",
    "Fault",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Response",
    "Vectorizer",
    "echo_memories_responder",
    "extract_memories",
    "hash_embedding",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
