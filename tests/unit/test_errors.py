"""Provider error classification: real SDK exception objects in, our two kinds out.

The retry decision is a plain ``isinstance`` on TransientError/PermanentError, so a wrong
mapping here either retries a request that can never succeed (burning the attempt cap) or
stamps-and-loses a session over a blip. The exceptions are built exactly as the SDKs build them
(openai 3.x wraps ``httpx2`` requests/responses).
"""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx2
import openai
import pytest
import voyageai.error as verr
from requests.structures import CaseInsensitiveDict

from eros.errors import ClaimLost, ConfigError, PermanentError, ProviderError, TransientError
from eros.providers.embeddings import check_vectors, translate_voyage_error
from eros.providers.llm import translate_openai_error
from eros.providers.retry_after import parse_retry_after

URL = "https://openrouter.example/api/v1/chat/completions"


def request() -> httpx2.Request:
    return httpx2.Request("POST", URL)


def response(status: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, headers=headers or {}, json={"error": {"message": "boom"}},
                           request=request())


def status_error(cls: type[openai.APIStatusError], status: int,
                 headers: dict[str, str] | None = None) -> openai.APIStatusError:
    return cls("boom", response=response(status, headers), body={"error": {"message": "boom"}})


# --- openai -------------------------------------------------------------------------------

def test_connection_error_is_transient() -> None:
    err = translate_openai_error(openai.APIConnectionError(request=request()))
    assert isinstance(err, TransientError)
    assert err.provider == "llm" and err.retry_after is None and err.status is None
    assert "connection" in str(err)


def test_timeout_is_transient() -> None:
    err = translate_openai_error(openai.APITimeoutError(request=request()))
    assert isinstance(err, TransientError) and "timeout" in str(err)


@pytest.mark.parametrize(("cls", "status", "header", "retry_after"), [
    (openai.RateLimitError, 429, "7", 7.0),
    (openai.RateLimitError, 429, None, None),
    (openai.InternalServerError, 500, "1.5", 1.5),
    (openai.InternalServerError, 502, "garbage", None),
    (openai.InternalServerError, 503, "0", 0.0),
    (openai.APIStatusError, 529, "3", 3.0),
    (openai.APIStatusError, 408, None, None),
    (openai.ConflictError, 409, None, None),
])
def test_retryable_statuses_are_transient_with_retry_after(
        cls: type[openai.APIStatusError], status: int, header: str | None,
        retry_after: float | None) -> None:
    headers = {"retry-after": header} if header is not None else None
    err = translate_openai_error(status_error(cls, status, headers))
    assert isinstance(err, TransientError)
    assert err.status == status and err.provider == "llm"
    assert err.retry_after == retry_after


def test_retry_after_as_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    err = translate_openai_error(status_error(openai.RateLimitError, 429, {"Retry-After": when}))
    assert isinstance(err, TransientError)
    assert err.retry_after is not None and 100 < err.retry_after <= 120


@pytest.mark.parametrize(("cls", "status"), [
    (openai.BadRequestError, 400), (openai.AuthenticationError, 401),
    (openai.PermissionDeniedError, 403), (openai.NotFoundError, 404),
    (openai.UnprocessableEntityError, 422),
])
def test_client_errors_are_permanent(cls: type[openai.APIStatusError], status: int) -> None:
    err = translate_openai_error(status_error(cls, status, {"retry-after": "5"}))
    assert isinstance(err, PermanentError) and not isinstance(err, TransientError)
    assert err.status == status and err.provider == "llm"
    assert f"HTTP {status}" in str(err)


def test_long_error_message_is_shortened() -> None:
    err = openai.BadRequestError("x" * 5000, response=response(400), body=None)
    assert len(str(translate_openai_error(err))) < 400


# --- voyageai -----------------------------------------------------------------------------

def voyage(cls: type[verr.VoyageError], status: int | None,
           headers: Any = None) -> verr.VoyageError:
    return cls("boom", http_body='{"detail": "boom"}', http_status=status,
               json_body={"detail": "boom"}, headers=headers)


@pytest.mark.parametrize(("cls", "status", "headers", "retry_after"), [
    (verr.RateLimitError, 429, {"retry-after": "3"}, 3.0),
    (verr.RateLimitError, 429, CaseInsensitiveDict({"Retry-After": "4"}), 4.0),
    (verr.RateLimitError, 429, {"Retry-After": "2"}, 2.0),
    (verr.RateLimitError, 429, None, None),
    (verr.ServerError, 500, None, None),
    (verr.ServiceUnavailableError, 503, {"retry-after": "9"}, 9.0),
    (verr.APIError, 502, None, None),  # what the SDK raises for an unmapped 5xx
    (verr.Timeout, None, None, None),
    (verr.APIConnectionError, None, None, None),
    (verr.TryAgain, None, None, None),
    (verr.APIError, 408, None, None),  # timeouts and conflicts retry like the LLM side
    (verr.APIError, 409, None, None),
])
def test_voyage_transient(cls: type[verr.VoyageError], status: int | None, headers: Any,
                          retry_after: float | None) -> None:
    err = translate_voyage_error(voyage(cls, status, headers))
    assert isinstance(err, TransientError)
    assert err.provider == "embedding" and err.status == status
    assert err.retry_after == retry_after


@pytest.mark.parametrize(("cls", "status"), [
    (verr.InvalidRequestError, 400), (verr.AuthenticationError, 401),
    (verr.APIError, 403), (verr.MalformedRequestError, 422), (verr.APIError, 404),
])
def test_voyage_permanent(cls: type[verr.VoyageError], status: int) -> None:
    err = translate_voyage_error(voyage(cls, status, {"retry-after": "3"}))
    assert isinstance(err, PermanentError) and not isinstance(err, TransientError)
    assert err.status == status and f"HTTP {status}" in str(err)


def test_wrong_vector_size_or_count_is_permanent() -> None:
    check_vectors([[0.0] * 4, [1.0] * 4], 2, 4)
    with pytest.raises(PermanentError, match="EMBEDDING_DIM"):
        check_vectors([[0.0] * 3], 1, 4)
    with pytest.raises(PermanentError, match="1 vectors for 2 texts"):
        check_vectors([[0.0] * 4], 2, 4)


# --- Retry-After --------------------------------------------------------------------------

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("value", "expected"), [
    ("0", 0.0), ("5", 5.0), (" 12 ", 12.0), ("2.5", 2.5), ("-3", 0.0),
    ("Sun, 01 Mar 2026 12:00:30 GMT", 30.0),
    ("Sun, 01 Mar 2026 11:00:00 GMT", 0.0),  # in the past: come back now
    ("Sunday, 01-Mar-26 12:01:00 GMT", 60.0),  # RFC 850 form
    ("Sun, 01 Mar 2026 12:00:10", 10.0),  # no zone: read as UTC
    (None, None), ("", None), ("soon", None), ("5 seconds", None), ("Sun, 99 Foo", None),
    ("nan", 0.0),
])
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


# --- surviving Celery's serialisation -----------------------------------------------------

def test_transient_error_survives_pickle() -> None:
    err = TransientError("LLM HTTP 429: slow down", provider="llm", status=429, retry_after=7.5)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is TransientError
    assert (str(back), back.provider, back.status, back.retry_after) == \
        ("LLM HTTP 429: slow down", "llm", 429, 7.5)


@pytest.mark.parametrize("err", [
    PermanentError("HTTP 400", provider="embedding", status=400),
    ProviderError("x", provider="llm", status=None),
    ConfigError("DATABASE_URL: bad"), ClaimLost(),
])
def test_other_errors_survive_pickle(err: Exception) -> None:
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err)
    for attr in ("provider", "status"):
        assert getattr(back, attr, None) == getattr(err, attr, None)


def test_translated_errors_survive_pickle() -> None:
    err = translate_openai_error(status_error(openai.RateLimitError, 429, {"retry-after": "4"}))
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, TransientError) and back.retry_after == 4.0 and back.status == 429
