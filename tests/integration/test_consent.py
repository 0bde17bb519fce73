"""Consent that lasts (issue 32): ``forget --sensitive LABEL`` records that the label is not
to be stored again for that user — the next session's candidates with it are dropped at
extraction and counted — until the product lifts it; ``relabel`` labels rows written without
a label (before 0018), resumably. Real PostgreSQL, the real SDKs against the fake servers."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from typing import Any

from prometheus_client import REGISTRY
from sqlalchemy import Engine, text

from eros.dreaming.services.classify import Pipeline, classify, start_attempt
from eros.memory.db import repo
from eros.privacy.db import consent_sql, erasure_sql
from eros.privacy.services import consent, forget
from eros.settings import Settings
from testkit.data import add_session
from testkit.fakes import FakeLLMServer, Reply
from tests.support.classify import fake_pipeline

MEMORIES = [{"content": "Has had insomnia for months", "category": "fact",
             "sensitivity": "health"},
            {"content": "Goes to church on Sundays", "category": "fact", "sensitivity": "beliefs"},
            {"content": "Likes jazz music", "category": "preference"}]


def _withheld_count(label: str) -> float:
    return REGISTRY.get_sample_value("eros_sensitive_withheld_total", {"label": label}) or 0.0


def _session(engine: Engine, pipeline: Pipeline, user: uuid.UUID) -> Any:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", f"talk {uuid.uuid4()}")], user_id=user)
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    attempt = start_attempt(pipeline, sid, claim.token)
    assert attempt is not None
    return classify(pipeline, attempt)


def _labels(engine: Engine, user: uuid.UUID) -> list[tuple[str, str | None]]:
    with engine.connect() as conn:
        return sorted((r.content, r.sensitivity) for r in conn.execute(text(
            "SELECT content, sensitivity FROM engine.companion_memories WHERE user_id = :u"),
            {"u": user}))


def test_a_withdrawn_label_is_not_stored_again_until_allowed(
        engine: Engine, llm: FakeLLMServer, provider_settings: Callable[..., Settings]) -> None:
    llm.set_responder(lambda _: Reply(json.dumps({"memories": MEMORIES})))
    settings = provider_settings()
    pipeline = fake_pipeline(settings, engine)
    user, other = uuid.uuid4(), uuid.uuid4()
    assert _session(engine, pipeline, user).memories_written == 3
    counts = forget.forget_sensitive(engine, user, "health")
    assert (counts["memories"], counts["withheld"]) == (1, 1)
    with engine.connect() as conn:
        assert [(r["label"], r["erasure_id"]) for r in consent_sql.withheld(conn, user)] == [
            ("health", counts["erasure_id"])]
    before = _withheld_count("health")
    report = _session(engine, pipeline, user)  # the next session says it again
    assert report.memories_written == 2 and report.detail["withheld"] == {"health": 1}
    assert _withheld_count("health") == before + 1
    assert ("Has had insomnia for months", "health") not in _labels(engine, user)
    # another user, and another label of this one, are stored as usual
    assert _session(engine, pipeline, other).memories_written == 3
    assert ("Goes to church on Sundays", "beliefs") in _labels(engine, user)
    # forget --sensitive (every label) withholds the rest; allowing one lifts only it
    assert forget.forget_sensitive(engine, user)["withheld"] == 5
    assert consent.allow_sensitive(engine, user, "health") == {"allowed": ["health"]}
    assert consent.allow_sensitive(engine, user, "health") == {"allowed": []}
    report = _session(engine, pipeline, user)
    assert report.memories_written == 2 and report.detail["withheld"] == {"beliefs": 1}
    assert ("Has had insomnia for months", "health") in _labels(engine, user)


def test_relabel_labels_rows_written_before_0018_and_resumes(engine: Engine) -> None:
    user = uuid.uuid4()
    contents = ["Has had insomnia for months", "Goes to church on Sundays", "Likes jazz",
                "Was diagnosed with asthma", "我最近总是失眠"]
    with engine.begin() as conn:
        for content in contents:
            conn.execute(text("INSERT INTO engine.companion_memories (user_id, content,"
                              " category, created_at) VALUES (:u, :c, 'fact',"
                              " now() - interval '1 day')"), {"u": user, "c": content})
    withdrawn = uuid.uuid4()  # a user who had withdrawn "beliefs" before the relabel
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO engine.companion_memories (user_id, content, category,"
                          " created_at) VALUES (:u, 'Prays every morning', 'fact',"
                          " now() - interval '1 day')"), {"u": withdrawn})
        consent_sql.withhold(conn, withdrawn, ["beliefs"])
    first = consent.relabel(engine, batch=2, max_batches=1)
    assert (first["scanned"], first["done"]) == (2, False)
    with engine.begin() as conn:  # written after the run began: the write path labels it
        conn.execute(text("INSERT INTO engine.companion_memories (user_id, content, category)"
                          " VALUES (:u, 'Takes insulin for diabetes', 'fact')"), {"u": user})
    rest = consent.relabel(engine, batch=2)  # resumes at the cursor
    assert (rest["scanned"], rest["total_scanned"], rest["done"]) == (4, 6, True)
    assert rest["total_labelled"] == 5
    # labelled with a label its user withheld: erased as forget --sensitive would have
    assert first["erased"] + rest["erased"] == 1 and _labels(engine, withdrawn) == []
    assert _labels(engine, user) == sorted([
        ("Has had insomnia for months", "health"), ("Goes to church on Sundays", "beliefs"),
        ("Likes jazz", None), ("Was diagnosed with asthma", "health"),
        ("我最近总是失眠", "health"), ("Takes insulin for diabetes", None)])
    assert consent.relabel(engine)["scanned"] == 0  # done: nothing more until --restart
    assert consent.relabel(engine, restart=True)["scanned"] == 2
    with engine.connect() as conn:
        logged = erasure_sql.list_erasures(conn, withdrawn)
    assert [(r["scope"], r["counts"]["memories"]) for r in logged] == [("sensitive", 1)]


def test_a_classify_in_flight_when_consent_is_withdrawn_stores_nothing_of_it(
        engine: Engine, llm: FakeLLMServer, provider_settings: Callable[..., Settings]) -> None:
    """READ COMMITTED race: the attempt read the user's (empty) withheld labels before the
    forget committed, the model answers after it. Its claim is dropped by the forget, so it
    writes nothing; the session is extracted again at once, without the label."""
    asked, release = threading.Event(), threading.Event()

    def held(_: dict[str, Any]) -> Reply:
        asked.set()
        assert release.wait(30)
        return Reply(json.dumps({"memories": MEMORIES}))

    settings = provider_settings(llm_timeout_secs=40)
    pipeline = fake_pipeline(settings, engine)
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "a long talk")], user_id=user)
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    attempt = start_attempt(pipeline, sid, claim.token)
    assert attempt is not None
    llm.set_responder(held)
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(classify(pipeline, attempt)))
    thread.start()
    assert asked.wait(20)
    counts = forget.forget_sensitive(engine, user, "health")
    assert (counts["withheld"], counts["claims_released"]) == (1, 1)
    release.set()
    thread.join(30)
    assert out[0].outcome == "claim_lost" and _labels(engine, user) == []
    assert _session_again(engine, pipeline, sid).detail["withheld"] == {"health": 1}
    assert ("Has had insomnia for months", "health") not in _labels(engine, user)
    assert len(_labels(engine, user)) == 2


def _session_again(engine: Engine, pipeline: Pipeline, sid: uuid.UUID) -> Any:
    with engine.begin() as conn:
        claim = repo.claim_one(conn, sid, stale_secs=600)  # claimable again at once
    assert claim is not None
    attempt = start_attempt(pipeline, sid, claim.token)
    assert attempt is not None
    return classify(pipeline, attempt)
