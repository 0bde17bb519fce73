"""The model labeller of ``relabel`` (issue 32 item 5: "with the offline labeller or the
model"): rows written before 0018 sent to the model through the real openai SDK against the
local fake OpenRouter server, 20 a call, through the global limits (Redis) and costed; its
reply read strictly (an unreadable entry or reply leaves rows unlabelled, counted); resumable
on its own cursor (``relabel_progress.labeller = 'model'``), also after a provider outage; a
label the user withheld erased; no memory text nor reply in the logs."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import redis
from prometheus_client import REGISTRY
from sqlalchemy import Engine, text

from eros.errors import ConfigError, TransientError
from eros.privacy.db import consent_sql, erasure_sql
from eros.privacy.services import consent
from eros.providers.llm import OpenRouterChat
from eros.providers.offline import OfflineChat
from eros.providers.ratelimit import make_limiter
from eros.settings import Settings
from testkit.fakes import FakeLLMServer, Fault, Reply

USER, WITHDRAWN = uuid.uuid4(), uuid.uuid4()
NEUTRAL = [f"Likes topic number {n}" for n in range(4, 21)]


def _id(n: int) -> uuid.UUID:
    """Ids in the order the relabel scans them (by id): row n is in call (n - 1) // 20 + 1."""
    return uuid.UUID(f"00000000-0000-4000-8000-{n:012d}")


#: call 1: a health row, a beliefs row of a user who withheld beliefs, an entry the model
#: garbles, 17 without a category; call 2: five rows in a reply that is not JSON at all
ROWS = ([(1, USER, "Has asthma"), (2, WITHDRAWN, "Goes to church on Sundays"),
         (3, USER, "Mentions GARBLE often")]
        + [(n, USER, NEUTRAL[n - 4]) for n in range(4, 21)]
        + [(21, USER, "SCRAMBLE the reply"), (22, USER, "Cannot sleep, insomnia")]
        + [(n, USER, f"Collects stamps {n}") for n in range(23, 26)])


def _model(request: dict[str, Any]) -> Reply:
    """A fake labelling model: it reads the numbered notes and answers per note."""
    notes = json.loads(request["messages"][-1]["content"])
    if any("SCRAMBLE" in n["note"] for n in notes):
        return Reply("Sorry, I would rather talk about something else.")
    labels: dict[str, str | None] = {}
    for note in notes:
        content = note["note"]
        labels[str(note["n"])] = ("health" if "asthma" in content or "insomnia" in content
                                  else "beliefs" if "church" in content
                                  else "perhaps" if "GARBLE" in content else None)
    return Reply(json.dumps({"labels": labels}))


def _seed(engine: Engine) -> None:
    with engine.begin() as conn:
        for n, user, content in ROWS:
            conn.execute(text(
                "INSERT INTO engine.companion_memories (id, user_id, content, category,"
                " created_at) VALUES (:i, :u, :c, 'fact', now() - interval '1 day')"),
                {"i": _id(n), "u": user, "c": content})
        consent_sql.withhold(conn, WITHDRAWN, ["beliefs"])


def _labels(engine: Engine) -> dict[int, str | None]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, sensitivity FROM engine.companion_memories"))
        return {int(str(r.id)[-12:]): r.sensitivity for r in rows}


def _sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


@pytest.fixture
def settings(redis_url: str, provider_settings: Callable[..., Settings]) -> Settings:
    # a global request limit: the calls go through the Redis limiter
    return provider_settings(voyage=False, redis_url=redis_url, llm_requests_per_minute=600,
                             dreaming_retry_backoff_secs=0.01)


def test_the_model_labels_old_rows_strictly_resumably_and_costed(
        engine: Engine, settings: Settings, llm: FakeLLMServer, redis_url: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _seed(engine)
    llm.set_responder(_model)
    chat, limiter = OpenRouterChat(settings), make_limiter(settings)
    unreadable_before = _sample("eros_relabel_unreadable_total")
    cost_before = _sample("eros_cost_usd_total")
    prompt_before = _sample("eros_tokens_total", {"kind": "prompt"})

    def run(**kwargs: Any) -> dict[str, Any]:
        return consent.relabel(engine, labeller="model", settings=settings, llm=chat,
                               limiter=limiter, **kwargs)

    first = run(max_batches=1)  # one call of 20: a task's bounded run
    assert (first["scanned"], first["calls"], first["done"]) == (20, 1, False)
    assert (first["labelled"], first["unreadable"], first["erased"]) == (2, 1, 1)
    labels = _labels(engine)
    assert labels[1] == "health" and 2 not in labels  # withheld beliefs: erased
    assert labels[3] is None  # "perhaps" is no label: left unlabelled, counted
    assert all(labels[n] is None for n in range(4, 21))
    with engine.connect() as conn:
        logged = erasure_sql.list_erasures(conn, WITHDRAWN)
    assert [(r["scope"], r["counts"]["memories"]) for r in logged] == [("sensitive", 1)]

    # the provider fails (503) past the retries: the run stops, the cursor keeps call 1
    calls = len(llm.requests)
    llm.script([Fault.status(503)] * 6)
    with pytest.raises(TransientError):
        run()
    assert len(llm.requests) == calls + 6
    with engine.connect() as conn:
        progress = consent_sql.progress(conn, "model")
    assert progress is not None and (progress["scanned"], progress["labelled"]) == (20, 2)

    rest = run()  # resumes after row 20
    assert (rest["scanned"], rest["done"], rest["total_scanned"]) == (5, True, 25)
    assert (rest["labelled"], rest["unreadable"], rest["total_labelled"]) == (0, 5, 2)
    assert _labels(engine)[22] is None  # a reply that is not JSON labels nothing
    assert run()["scanned"] == 0  # done until --restart
    with engine.connect() as conn:
        assert consent_sql.progress(conn, "offline") is None  # the offline cursor: its own

    # every call: the configured model, at most 20 notes, the system prompt, never a label
    # guessed from a reply that could not be read
    sent = [r.body for r in llm.requests if r.body]
    assert all(b["model"] == settings.dreaming_model for b in sent)
    assert all(len(json.loads(b["messages"][-1]["content"])) <= 20 for b in sent)
    assert _sample("eros_relabel_unreadable_total") == unreadable_before + 6
    # costed with the price table, and counted where every provider call is
    tokens = (first["prompt_tokens"] + rest["prompt_tokens"],
              first["completion_tokens"] + rest["completion_tokens"])
    assert tokens[0] > 0 and tokens[1] > 0
    expected = (tokens[0] * settings.llm_price_input_per_mtok
                + tokens[1] * settings.llm_price_output_per_mtok) / 1e6
    assert first["cost_usd"] + rest["cost_usd"] == pytest.approx(expected)
    assert _sample("eros_cost_usd_total") == pytest.approx(cost_before + expected)
    assert _sample("eros_tokens_total", {"kind": "prompt"}) == prompt_before + tokens[0]
    # the global limiter was charged in Redis
    assert redis.Redis.from_url(redis_url).keys("eros:limit*")
    # no memory text and no reply in any log line
    logged_text = "\n".join(r.getMessage() for r in caplog.records)
    for _, _, content in ROWS:
        assert content not in logged_text
    assert "perhaps" not in logged_text and "Sorry" not in logged_text


def test_the_model_labeller_needs_a_live_model(engine: Engine, settings: Settings) -> None:
    with pytest.raises(ConfigError, match="OPENROUTER_API_KEY"):
        consent.relabel(engine, labeller="model", settings=settings, llm=OfflineChat())


def test_two_runs_never_label_the_same_rows_twice(engine: Engine, settings: Settings,
                                                  llm: FakeLLMServer) -> None:
    """Run A's call is held at the fake server while run B reads the same rows, asks and
    writes them; A's answer then finds the cursor moved and is dropped (no transaction was
    held over A's call, so B never waited). Barriers, no sleeps."""
    _seed(engine)
    arrived, release = threading.Event(), threading.Event()
    first = threading.Lock()
    held: list[bool] = []

    def responder(request: dict[str, Any]) -> Reply:
        with first:
            hold = not held
            held.append(hold)
        if hold:
            arrived.set()
            assert release.wait(30), "never released"
        return _model(request)

    llm.set_responder(responder)
    chat = OpenRouterChat(settings)
    out: dict[str, dict[str, Any]] = {}

    def run(name: str) -> None:
        out[name] = consent.relabel(engine, labeller="model", settings=settings, llm=chat,
                                    max_batches=1)

    a = threading.Thread(target=run, args=("a",))
    a.start()
    assert arrived.wait(30), "run A's call never arrived"
    run("b")  # the same 20 rows, answered at once, written
    release.set()
    a.join(30)
    assert (out["b"]["scanned"], out["b"]["labelled"], out["b"]["erased"]) == (20, 2, 1)
    assert (out["a"]["calls"], out["a"]["scanned"], out["a"]["labelled"]) == (1, 0, 0)
    with engine.connect() as conn:
        progress = consent_sql.progress(conn, "model")
        erasures = erasure_sql.list_erasures(conn, WITHDRAWN)
    assert progress is not None and (progress["scanned"], progress["labelled"]) == (20, 2)
    assert len(erasures) == 1  # the withheld row erased once
