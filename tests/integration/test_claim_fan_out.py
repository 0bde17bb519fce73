"""The claim's fan-out: one classify message per claimed session, sent to Redis as one pipeline
(kombu's ``Producer.batch``), and sent again one by one when the pipeline fails (issue 34: the
claim worker's CPU went to one LPUSH round trip per message)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from kombu.transport.redis import PublishBatch

from eros.dreaming.tasks import classify as classify_tasks
from eros.memory.core.claims import Claim
from eros.settings import Settings, load_settings
from eros.tasks.app import create_app


@pytest.fixture
def settings(redis_url: str) -> Iterator[Settings]:
    settings = load_settings(redis_url=redis_url,
                             eros_classify_queue=f"test-{uuid.uuid4().hex[:8]}.classify")
    create_app(settings)  # the current app: classify_session publishes through it
    yield settings
    redis.Redis.from_url(settings.redis_client_url()).delete(settings.eros_classify_queue)


def _claims(n: int) -> list[Claim]:
    return [Claim(uuid.uuid4(), uuid.uuid4(), None, uuid.uuid4()) for _ in range(n)]


def _queued(settings: Settings) -> list[tuple[str, str | None]]:
    client = redis.Redis.from_url(settings.redis_client_url())
    found = []
    for raw in client.lrange(settings.eros_classify_queue, 0, -1):
        message = json.loads(raw)
        assert message["headers"]["task"] == "eros.classify_session"
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args, kwargs, _ = json.loads(body)
        found.append((args[0], kwargs["claim_token"]))
    return found


def test_the_claims_messages_go_out_in_one_pipeline(settings: Settings,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    flushes: list[int] = []
    flush = PublishBatch.flush

    def counted(self: PublishBatch) -> None:
        flushes.append(self._buffered)
        flush(self)

    monkeypatch.setattr(PublishBatch, "flush", counted)
    claims = _claims(40)
    classify_tasks._fan_out(claims, settings.eros_classify_queue)
    assert [n for n in flushes if n] == [40]
    expected = {(str(c.session_id), str(c.token)) for c in claims}
    queued = _queued(settings)
    assert len(queued) == 40 and set(queued) == expected


def test_a_failed_pipeline_is_sent_again_one_by_one(settings: Settings,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """kombu never replays a pipeline (part of it may have landed): the fan-out sends every
    message again on its own; a duplicate is harmless (the claim token's fence)."""
    init = PublishBatch.__init__

    def broken(self: PublishBatch, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)

        def execute(*_: Any, **__: Any) -> Any:
            raise redis.ConnectionError("the broker went away mid-pipeline")

        self.pipeline.execute = execute  # type: ignore[method-assign]

    monkeypatch.setattr(PublishBatch, "__init__", broken)
    claims = _claims(5)
    with caplog.at_level("WARNING", logger="eros.worker"):
        classify_tasks._fan_out(claims, settings.eros_classify_queue)
    assert "sending them one by one" in caplog.text
    queued = _queued(settings)
    assert sorted(queued) == sorted((str(c.session_id), str(c.token)) for c in claims)
