"""Chat completions through the ``openai`` SDK at an OpenAI-compatible endpoint (OpenRouter,
Ollama, vLLM, llama.cpp, LM Studio, …)."""

from __future__ import annotations

import json
from typing import Any

import openai

from eros.core.text import safe_error_code
from eros.errors import PermanentError, TransientError
from eros.providers.base import Completion
from eros.providers.retry_after import parse_retry_after
from eros.settings import Settings

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
#: what ``chat.completions.create`` asks of the client: the API key as a bearer token.
_BEARER: openai.RequestOptions = {"security": {"bearer_auth": True}}


#: idle keep-alive connections the client keeps (the SDK's default is 100): a gevent worker
#: runs 128 or more calls at once, and past the limit every reply's connection was closed and
#: the next call connected afresh — a DNS lookup and a TCP (in production TLS) handshake each.
KEEPALIVE_CONNECTIONS = 512


def _limits() -> Any:
    """The SDK's connection limits with :data:`KEEPALIVE_CONNECTIONS` (the same class, whichever
    httpx the installed SDK uses)."""
    default = openai.DEFAULT_CONNECTION_LIMITS
    return type(default)(max_connections=max(default.max_connections or 0,
                                             KEEPALIVE_CONNECTIONS),
                         max_keepalive_connections=KEEPALIVE_CONNECTIONS,
                         keepalive_expiry=default.keepalive_expiry)


class OpenRouterChat:
    """``ChatCompleter`` over the openai SDK, with a hard timeout and bounded SDK retries."""

    offline = False

    def __init__(self, settings: Settings) -> None:
        self.name = settings.dreaming_model
        self._client = openai.OpenAI(
            base_url=settings.openrouter_base_url,
            api_key=settings.openrouter_api_key or "unset",
            timeout=settings.llm_timeout_secs,
            max_retries=settings.provider_max_retries,
            http_client=openai.DefaultHttpxClient(limits=_limits()),
        )

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        try:
            # The SDK's documented ``post`` for a body we build ourselves: the same request,
            # retries, timeout and errors as ``chat.completions.create``, without the typed
            # params' recursive transform (a third of the SDK's CPU per call); the
            # body is plain JSON types already. The reply comes back as its text (``cast_to=str``)
            # and is read here: the SDK's ChatCompletion model, built field by field for the
            # five values read below, was a fifth of the call's CPU (bench/RESULTS.md, issue 34).
            raw = self._client.post("/chat/completions", body=body, cast_to=str, options=_BEARER)
        except openai.APIError as err:
            raise translate_openai_error(err) from None
        return completion_of(raw, self.name)


def completion_of(raw: str, name: str) -> Completion:
    """A chat completion's reply text as a :class:`Completion`: the first choice's content and
    finish reason, the model (``name`` when the reply names none) and the usage's tokens (0 when
    absent). A reply that is not a JSON object with a choice is a TransientError, as a reply
    with no choices always was."""
    try:
        reply = json.loads(raw)
    except ValueError:
        raise TransientError("LLM reply was not JSON", provider="llm") from None
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise TransientError("LLM reply had no choices", provider="llm")
    choice = choices[0]
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    usage = reply.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Completion(
        text=content if isinstance(content, str) else "",
        finish_reason=choice.get("finish_reason"),
        model=reply.get("model") or name,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def translate_openai_error(err: openai.APIError) -> TransientError | PermanentError:
    """Network faults, timeouts, 408/409/429/5xx are transient; other statuses are permanent.

    The message (stored in ``last_error`` and ``classification_runs.error``, and logged) is
    the status and the provider's error code only, never its body: an OpenAI-compatible
    server may echo the prompt — a person's messages — in its error."""
    if isinstance(err, openai.APIConnectionError):  # includes APITimeoutError
        kind = "timeout" if isinstance(err, openai.APITimeoutError) else "connection error"
        return TransientError(f"LLM {kind}", provider="llm")
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        message = f"LLM HTTP {status}" + _codes(err.code, err.type)
        if status in _TRANSIENT_STATUS or status >= 500:
            retry_after = parse_retry_after(err.response.headers.get("retry-after"))
            return TransientError(message, provider="llm", status=status,
                                  retry_after=retry_after)
        return PermanentError(message, provider="llm", status=status)
    return TransientError(f"LLM error ({type(err).__name__})", provider="llm")


def _codes(*values: object) -> str:
    """``" (code, type)"``: the code-shaped ones of the error body's ``code`` and ``type``."""
    found = list(dict.fromkeys(c for c in map(safe_error_code, values) if c))
    return f" ({', '.join(found)})" if found else ""
