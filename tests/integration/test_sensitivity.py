"""Sensitive memories (issue 26): the model's ``"sensitivity"`` labels are stored by the write
path, recall leaves them out on request (API argument, setting) and marks a crisis, the result
of a consolidation merge keeps the most sensitive label, and ``forget --sensitive`` erases only
those memories, recorded with scope ``sensitive``. Real PostgreSQL, the real SDKs against the
fake servers."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, text

from eros.consolidation.db import consolidation_write_sql
from eros.dreaming.services.classify import classify, start_attempt
from eros.memory.db import repo
from eros.privacy.services import forget
from eros.providers.embeddings import VoyageEmbedder
from eros.recall.services.recall import recall
from eros.settings import Settings
from testkit.data import add_session
from testkit.fakes import FakeLLMServer, Reply
from tests.support.classify import fake_pipeline

MEMORIES = [
    {"content": "Has had insomnia for months", "category": "fact", "sensitivity": "health"},
    {"content": "Spoke of wanting to end it all", "category": "emotion",
     "sensitivity": " CRISIS "},
    {"content": "Goes to church on Sundays", "category": "fact", "sensitivity": "beliefs"},
    {"content": "Likes jazz music", "category": "preference", "sensitivity": "spicy"},
    {"content": "Works as a nurse", "category": "fact"},
]


@pytest.fixture
def settings(provider_settings: Callable[..., Settings]) -> Settings:
    return provider_settings(llm_timeout_secs=5, embedding_timeout_secs=5)


def _learn(engine: Engine, settings: Settings, llm: FakeLLMServer) -> uuid.UUID:
    """One session classified through the real pipeline; the model labels its memories."""
    llm.set_responder(lambda _: Reply(json.dumps({"memories": MEMORIES})))
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "a long talk"), ("assistant", "I see")],
                          user_id=user)
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    pipeline = fake_pipeline(settings, engine)
    attempt = start_attempt(pipeline, claim.session_id, claim.token)
    assert attempt is not None
    assert classify(pipeline, attempt).memories_written == len(MEMORIES)
    return user


def _labels(engine: Engine, user: uuid.UUID) -> dict[str, str | None]:
    with engine.connect() as conn:
        return {r.content: r.sensitivity for r in conn.execute(text(
            "SELECT content, sensitivity FROM engine.companion_memories WHERE user_id = :u"),
            {"u": user})}


def _written(label: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("eros_sensitive_memories_written_total",
                                     {"label": label}) or 0.0


def test_labels_are_stored_and_recall_can_leave_them_out(
        engine: Engine, settings: Settings, llm: FakeLLMServer) -> None:
    before = {label: _written(label) for label in ("health", "crisis", "beliefs")}
    user = _learn(engine, settings, llm)
    # counted by label, never by text
    assert {label: _written(label) - n for label, n in before.items()} == {
        "health": 1, "crisis": 1, "beliefs": 1}
    assert _labels(engine, user) == {
        "Has had insomnia for months": "health", "Spoke of wanting to end it all": "crisis",
        "Goes to church on Sundays": "beliefs", "Likes jazz music": None,
        "Works as a nurse": None}
    embedder = VoyageEmbedder(settings)

    def recalled(**kwargs: Any) -> dict[str, str | None]:
        result = recall(engine, embedder, user, "how is she doing", strategy="decay", k=10,
                        settings=kwargs.pop("cfg", settings), **kwargs)
        return {m.content: m.sensitivity for m in result.memories}

    everything = recalled()  # RECALL_INCLUDE_SENSITIVE defaults to true: nothing changes
    assert len(everything) == 5 and everything["Spoke of wanting to end it all"] == "crisis"
    assert set(recalled(include_sensitive=False)) == {"Likes jazz music", "Works as a nurse"}
    opted_out = settings.model_copy(update={"recall_include_sensitive": False})
    assert set(recalled(cfg=opted_out)) == {"Likes jazz music", "Works as a nurse"}
    assert len(recalled(cfg=opted_out, include_sensitive=True)) == 5  # the call wins

    result = recall(engine, embedder, user, "how is she doing", strategy="decay", k=10,
                    settings=settings)
    assert result.to_dict()["crisis"] is True
    for labels, mark in (("en", "[CRISIS — check on the user's safety]"),
                         ("zh", "【危机：请关注用户安全】")):
        lines = result.render(labels).splitlines()
        crisis = [line for line in lines if "end it all" in line]
        assert crisis and crisis[0].startswith(f"- {mark} ")
        assert not any(mark in line for line in lines if "end it all" not in line)


def test_forget_sensitive_erases_only_those_and_logs_the_scope(
        engine: Engine, settings: Settings, llm: FakeLLMServer) -> None:
    user = _learn(engine, settings, llm)
    one = forget.forget_sensitive(engine, user, "health")
    assert one["memories"] == 1
    assert "Has had insomnia for months" not in _labels(engine, user)
    rest = forget.forget_sensitive(engine, user)  # every label
    assert rest["memories"] == 2
    assert _labels(engine, user) == {"Likes jazz music": None, "Works as a nurse": None}
    again = forget.forget_sensitive(engine, user)
    assert again["memories"] == 0  # idempotent
    with engine.connect() as conn:
        log = conn.execute(text(
            "SELECT scope, status, user_id, counts FROM engine.erasure_log WHERE user_id = :u"
            " ORDER BY id"), {"u": user}).all()
    assert [(r.scope, r.status) for r in log] == [("sensitive", "done")] * 3
    assert [r.counts["memories"] for r in log] == [1, 2, 0]
    with pytest.raises(ValueError, match="unknown sensitivity label"):
        forget.forget_sensitive(engine, user, "spicy")


def test_a_merge_keeps_the_most_sensitive_label(engine: Engine, settings: Settings,
                                                llm: FakeLLMServer) -> None:
    user = _learn(engine, settings, llm)
    with engine.connect() as conn:
        ids = {r.content: r.id for r in conn.execute(text(
            "SELECT content, id FROM engine.companion_memories WHERE user_id = :u"),
            {"u": user})}
    kept, health, crisis, beliefs = (ids["Works as a nurse"], ids["Has had insomnia for months"],
                                     ids["Spoke of wanting to end it all"],
                                     ids["Goes to church on Sundays"])
    with engine.begin() as conn:
        consolidation_write_sql.keep_most_sensitive(conn, [(kept, beliefs), (kept, health)])
        consolidation_write_sql.keep_most_sensitive(conn, [(beliefs, crisis)])
        consolidation_write_sql.keep_most_sensitive(conn, [(crisis, health)])  # never a downgrade
    labels = _labels(engine, user)
    assert labels["Works as a nurse"] == "health"  # health outranks beliefs
    assert labels["Goes to church on Sundays"] == "crisis"
    assert labels["Spoke of wanting to end it all"] == "crisis"
