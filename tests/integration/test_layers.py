"""Layer routing on scripted replies through the real SDK and a real database (issue 18)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import Engine, text

from eros.dreaming.services.classify import Pipeline
from eros.prompts import load_prompt
from eros.settings import Settings
from testkit.data import add_session
from testkit.fakes import FakeLLMServer, Reply
from tests.support.classify import classify_session, fake_pipeline

REPLY = json.dumps({"memories": [
    {"content": "Lives in Tokyo", "category": "fact", "layer": "profile"},
    {"content": "Calls the companion Moon", "category": "preference", "layer": "relationship"},
    {"content": "Likes jazz", "category": "preference"},
    {"content": "Has a cat named Mochi", "category": "fact", "layer": "persona-ish"},
    {"content": "陪伴者答应过陪她看完那部电影", "category": "event", "layer": "relationship"},
]})


@pytest.fixture
def pipeline(engine: Engine, provider_settings: Callable[..., Settings]) -> Pipeline:
    settings = provider_settings(llm_timeout_secs=2, embedding_timeout_secs=2)
    return fake_pipeline(settings, engine, load_prompt(version="v3"))


def _classify(pipeline: Pipeline, sid: uuid.UUID) -> None:
    assert classify_session(pipeline, sid).outcome == "memories"


def _layers(pipeline: Pipeline, sid: uuid.UUID) -> dict[str, uuid.UUID | None]:
    with pipeline.engine.connect() as conn:
        return {r.content: r.instance_id for r in conn.execute(text(
            "SELECT content, instance_id FROM engine.companion_memories WHERE session_id = :s"),
            {"s": sid})}


def test_relationship_memories_get_the_sessions_persona(pipeline: Pipeline,
                                                         llm: FakeLLMServer) -> None:
    persona = uuid.uuid4()
    llm.script_replies([Reply(REPLY)])
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [("user", "hi"), ("assistant", "hello")], instance_id=persona)
    _classify(pipeline, sid)
    assert _layers(pipeline, sid) == {
        "Lives in Tokyo": None,                  # profile
        "Calls the companion Moon": persona,      # relationship
        "Likes jazz": None,                      # missing → profile
        "Has a cat named Mochi": None,           # unknown → profile
        "陪伴者答应过陪她看完那部电影": persona,
    }
    system = llm.requests[0].body["messages"][0]["content"]
    assert '"layer"' in system and "relationship" in system


def test_a_session_without_persona_writes_everything_to_the_profile(pipeline: Pipeline,
                                                                    llm: FakeLLMServer) -> None:
    llm.script_replies([Reply(REPLY)])
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [("user", "hi"), ("assistant", "hello")], instance_id=None)
    _classify(pipeline, sid)
    layers = _layers(pipeline, sid)
    assert len(layers) == 5 and set(layers.values()) == {None}
