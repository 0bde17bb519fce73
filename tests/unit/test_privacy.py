"""Log privacy and secrets: Celery's task lines lose their arguments and return value in both
formats; the settings' repr carries no URL password or API key (issue 14). Celery's error
records lose the message body, the SDKs' DEBUG records are dropped, provider error bodies
(echoing the request, through the real SDKs and the fakes) are never kept, URLs are masked
(issue 26)."""

from __future__ import annotations

import json
import logging

import pytest

from eros.errors import ProviderError, TransientError
from eros.ops.logs import JsonFormatter, PrivacyFilter
from eros.providers.embeddings import VoyageEmbedder
from eros.providers.llm import OpenRouterChat
from eros.settings import load_settings
from testkit.fakes import FakeLLMServer, FakeVoyageServer, Fault

SECRET = "zqxsecret1234"


def _celery_record(fmt: str, context: dict[str, object]) -> logging.LogRecord:
    record = logging.LogRecord("celery.app.trace", logging.INFO, __file__, 1, fmt, (context,),
                               None)
    record.args = context  # what logging does with a single dict argument
    record.data = context
    return record


def test_celery_lines_lose_args_and_return_value_in_both_formats() -> None:
    succeeded = _celery_record("Task %(name)s[%(id)s] succeeded in %(runtime)ss: "
                               "%(return_value)s", {
                                   "id": "t1", "name": "eros.recall", "runtime": 0.1,
                                   "return_value": f"{{'prompt': '{SECRET}'}}",
                                   "args": f"['u', '{SECRET}']", "kwargs": "{}"})
    received = _celery_record("Task %(name)s[%(id)s] received", {
        "id": "t2", "name": "eros.recall", "args": f"['u', '{SECRET}']", "kwargs": "{}",
        "eta": None})
    for record in (succeeded, received):
        assert PrivacyFilter().filter(record)
        for formatter in (JsonFormatter(), logging.Formatter("%(levelname)s %(message)s")):
            line = formatter.format(record)
            assert SECRET not in line and "eros.recall" in line
    assert "<hidden>" in succeeded.getMessage()


def test_other_records_pass_unchanged() -> None:
    record = logging.LogRecord("eros", logging.INFO, __file__, 1, "%s memories", (3,), None)
    assert PrivacyFilter().filter(record) and record.getMessage() == "3 memories"


def test_settings_repr_has_no_password_or_key() -> None:
    settings = load_settings(database_url=f"postgresql://u:{SECRET}@h/db",
                             redis_url=f"redis://:{SECRET}@h:1/0",
                             openrouter_api_key=SECRET, voyage_api_key=SECRET)
    assert SECRET not in repr(settings) and SECRET not in str(settings)


# --- issue 26: DEBUG logs, Celery's error records, provider errors, URLs --------------------

def _format_both(record: logging.LogRecord) -> list[str]:
    return [f.format(record) for f in (JsonFormatter(),
                                       logging.Formatter("%(levelname)s %(message)s"))]


class _Message:
    """What Celery's consumer reads of a kombu message when it logs one."""

    def __init__(self, body: bytes, headers: dict[str, object]) -> None:
        self.body, self.headers = body, headers
        self.content_type, self.content_encoding = "application/json", "utf-8"
        self.delivery_info = {"exchange": "eros.claim", "routing_key": "eros.claim"}


def _consumer_records() -> list[logging.LogRecord]:
    """Celery's own templates with its own body dump, as its consumer logs them."""
    from celery.worker.consumer import consumer as c

    headers = {"id": "t-1", "task": "eros.nope", "argsrepr": ("u", SECRET),
               "kwargsrepr": {"query": SECRET}, "origin": "gen1@host"}
    message = _Message(json.dumps([["u", SECRET], {}, {}]).encode(), headers)
    dump = c.dump_body(message, [["u", SECRET], {}, {}])

    def record(level: int, msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("celery.worker.consumer.consumer", level, __file__, 1, msg,
                                 args, None)

    return [
        record(logging.ERROR, c.UNKNOWN_TASK_ERROR, KeyError("eros.nope"), dump, headers,
               message.delivery_info),
        record(logging.ERROR, c.INVALID_TASK_ERROR, ValueError("bad"), dump),
        record(logging.CRITICAL, c.MESSAGE_DECODE_ERROR, ValueError("bad json"),
               message.content_type, message.content_encoding, repr(headers), dump),
        record(logging.WARNING, c.UNKNOWN_FORMAT, f"body: {dump} headers={headers!r}"),
        # at DEBUG the pool logs the message's arguments and headers, pre-formatted
        record(logging.DEBUG, "TaskPool: Apply %s (args:%s kwargs:%s)", "fast_trace_task",
               repr(("eros.recall", "t-3", headers, json.dumps([["u", SECRET]]))), "{}"),
        # the ETA error passes the request's info dict inside a tuple of arguments
        record(logging.ERROR, "Couldn't convert ETA %r to timestamp: %r. Task: %r", "x",
               ValueError("eta"), {"id": "t-2", "name": "eros.recall",
                                   "args": ("u", SECRET), "kwargs": {"q": SECRET}}),
    ]


def test_celery_error_records_lose_the_message_body_whatever_the_shape() -> None:
    for record in _consumer_records():
        assert PrivacyFilter().filter(record)
        for line in _format_both(record):
            assert SECRET not in line, line
    unknown = _consumer_records()[0]
    PrivacyFilter().filter(unknown)
    message = unknown.getMessage()
    assert "eros.nope" in message and "t-1" in message  # the task's name and id stay


def test_third_party_debug_records_are_dropped_unless_asked_for(
        caplog: pytest.LogCaptureFixture) -> None:
    from eros.ops import logs

    voyage = logging.LogRecord("voyage", logging.DEBUG, __file__, 1, "Post details: %s",
                               ({"input": [SECRET]},), None)
    httpx_info = logging.LogRecord("httpx2._client", logging.INFO, __file__, 1, "POST %s",
                                   (f"http://u:{SECRET}@h/v1",), None)
    warning = logging.LogRecord("openai._base_client", logging.WARNING, __file__, 1, "retrying",
                                (), None)
    try:
        logging.getLogger("voyage").setLevel(logging.DEBUG)
        logs.pin_third_party(None)
        for name in ("voyage", "openai", "httpx", "httpx2", "httpcore", "urllib3", "kombu",
                     "amqp"):
            assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING, name
        assert not PrivacyFilter().filter(voyage) and not PrivacyFilter().filter(httpx_info)
        assert PrivacyFilter().filter(warning)
        with caplog.at_level(logging.WARNING, logger="eros"):
            logs.pin_third_party("debug")
        assert "EROS_LOG_THIRD_PARTY=debug" in caplog.text
        assert PrivacyFilter().filter(voyage)
    finally:
        logs.pin_third_party(None)


def test_urls_are_logged_masked() -> None:
    from eros.core.text import mask_url

    assert mask_url(f"https://bob:{SECRET}@llm.example:8443/v1?key={SECRET}#{SECRET}") == \
        "https://***@llm.example:8443/v1?***#***"
    assert mask_url("https://openrouter.ai/api/v1") == "https://openrouter.ai/api/v1"
    assert mask_url("http://[::1]:bad/") == "<unparseable url>"


def test_provider_error_bodies_are_never_kept(llm: FakeLLMServer,
                                              voyage: FakeVoyageServer) -> None:
    """Both servers echo the request in their error body, through the real SDKs."""
    settings = load_settings(openrouter_api_key="k", openrouter_base_url=llm.url,
                             voyage_api_key="k", voyage_base_url=voyage.url,
                             provider_max_retries=0, embedding_dim=8)
    llm.script([Fault.echo(400), Fault.echo(500)])
    voyage.script([Fault.echo(400), Fault.echo(503)])
    errors: list[Exception] = []
    chat, embedder = OpenRouterChat(settings), VoyageEmbedder(settings)
    for _ in range(2):
        with pytest.raises(ProviderError) as caught:
            chat.complete("system", f"user says {SECRET}", max_tokens=10)
        errors.append(caught.value)
        with pytest.raises(ProviderError) as caught:
            embedder.embed([f"memory {SECRET}"], input_type="document")
        errors.append(caught.value)
    assert all(SECRET in r.raw_body.decode() for r in llm.requests + voyage.requests)
    for err in errors:
        assert SECRET not in str(err) and "HTTP" in str(err), str(err)
    assert str(errors[0]) == "LLM HTTP 400 (invalid_request_error)"
    assert isinstance(errors[2], TransientError) and errors[2].status == 500
