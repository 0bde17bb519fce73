"""Provenance on the write path (issue 24): classify stores the seqs each memory cites, or the
extraction window flagged as a fallback — real PostgreSQL, the real openai SDK against the fake
model server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, text

from eros.dreaming.services.classify import Pipeline
from eros.prompts import load_prompt
from eros.settings import Settings
from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, Reply
from tests.support.classify import classify_session, fake_pipeline


def _pipeline(engine: Engine, provider_settings: Callable[..., Settings],
              version: str = "v5") -> Pipeline:
    settings = provider_settings(
        llm_timeout_secs=2, embedding_timeout_secs=2, dreaming_prompt_version=version)
    return fake_pipeline(settings, engine, load_prompt(version=version))


@pytest.fixture
def pipeline(engine: Engine, provider_settings: Callable[..., Settings]) -> Pipeline:
    return _pipeline(engine, provider_settings)


def _seqs(engine: Engine, sid: uuid.UUID) -> list[int]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT seq FROM engine.chat_messages"
                                      " WHERE session_id = :s ORDER BY seq"), {"s": sid}).scalars())


def _provenance(engine: Engine, sid: uuid.UUID) -> dict[str, tuple[list[int] | None, bool]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT content, source_seqs, source_fallback"
                                 " FROM engine.companion_memories WHERE session_id = :s"),
                            {"s": sid}).all()
    return {r.content: (r.source_seqs, r.source_fallback) for r in rows}


def _session(engine: Engine) -> uuid.UUID:
    with engine.begin() as conn:
        return add_session(conn, [
            ("system", "persona prompt"),             # never shown: not part of the window
            mem_line("fact", 0.7, "Lives in Lyon"),    # [1]
            ("assistant", "Lyon is lovely."),          # [2]
            mem_line("preference", 0.4, "Likes jazz"),  # [3]
            ("user", "good night"),                    # [4]
        ])


def test_cited_turns_are_stored_as_their_seqs(pipeline: Pipeline, llm: FakeLLMServer) -> None:
    sid = _session(pipeline.engine)
    report = classify_session(pipeline, sid)
    assert report.outcome == "memories" and report.memories_written == 2
    prompt = llm.requests[0].body["messages"][1]["content"]
    assert "[1] user: MEM fact 0.7 Lives in Lyon" in prompt and "[4] user: good night" in prompt
    seqs = _seqs(pipeline.engine, sid)
    assert _provenance(pipeline.engine, sid) == {"Lives in Lyon": ([seqs[1]], False),
                                                 "Likes jazz": ([seqs[3]], False)}


def test_missing_or_invalid_citations_fall_back_to_the_window_flagged(
        pipeline: Pipeline, llm: FakeLLMServer) -> None:
    llm.script_replies([Reply(json.dumps({"memories": [
        {"content": "Lives in Lyon", "category": "fact", "sources": [1, 3]},
        {"content": "Likes jazz", "category": "preference", "sources": [3, 9]},  # 9: no such
        {"content": "Says good night", "category": "preference"},              # none given
        {"content": "Is tired", "category": "emotion", "sources": "the last one",
         "sensitivity": "health"},
    ]}))])
    sid = _session(pipeline.engine)
    assert classify_session(pipeline, sid).memories_written == 4
    seqs = _seqs(pipeline.engine, sid)
    window = seqs[1:]  # every turn shown to the model; the system turn is not
    assert _provenance(pipeline.engine, sid) == {
        "Lives in Lyon": ([seqs[1], seqs[3]], False), "Likes jazz": (window, True),
        "Says good night": (window, True), "Is tired": (window, True)}


def test_an_older_prompt_reads_the_plain_transcript_and_is_flagged(
        engine: Engine, llm: FakeLLMServer, provider_settings: Callable[..., Settings]) -> None:
    pipeline = _pipeline(engine, provider_settings, version="v4")
    sid = _session(engine)
    assert classify_session(pipeline, sid).memories_written == 2
    prompt = llm.requests[0].body["messages"][1]["content"]
    assert "\nuser: MEM fact 0.7 Lives in Lyon" in prompt and "[1]" not in prompt
    window = _seqs(engine, sid)[1:]
    assert _provenance(engine, sid) == {"Lives in Lyon": (window, True),
                                        "Likes jazz": (window, True)}


def test_memories_written_before_provenance_have_null_sources(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn)
        conn.execute(text("INSERT INTO engine.companion_memories (session_id, user_id, content,"
                          " category) SELECT id, user_id, 'old', 'fact'"
                          " FROM engine.chat_sessions WHERE id = :s"), {"s": sid})
    assert _provenance(engine, sid) == {"old": (None, False)}


@pytest.mark.parametrize("plan", ["exact", "quantized", "hnsw"])
@pytest.mark.parametrize("strategy", ["grouped", "decay", "composite"])
def test_recall_returns_each_memory_s_sources(engine: Engine, strategy: str, plan: str) -> None:
    from eros.recall import recall_by_vector
    from eros.settings import load_settings as settings_for
    from tests.support.memories import QUERY, Mem, add, at_cosine, with_hnsw

    if plan == "hnsw":  # what `eros migrate` builds for RECALL_QUANTIZED_SCAN=false
        with_hnsw(engine)
    user, now = uuid.uuid4(), datetime.now(UTC)
    with engine.begin() as conn:
        cited, window, old = add(conn, now, Mem(user, "Lives in Lyon", "fact", at_cosine(0.9, 1)),
                                 Mem(user, "Likes jazz", "preference", at_cosine(0.8, 2)),
                                 Mem(user, "Has a cat", "fact", at_cosine(0.7, 3)))
        # far-away rows, so a scope of 23 is larger than the pool and the plan is honoured
        add(conn, now, *(Mem(user, f"filler {j}", "event", at_cosine(0.0, 10 + j))
                         for j in range(20)))
        conn.execute(text("UPDATE engine.companion_memories SET source_seqs = :s,"
                          " source_fallback = :f WHERE id = :i"),
                     [{"i": cited, "s": [12, 15], "f": False},
                      {"i": window, "s": [3, 4, 5], "f": True}])
    overrides: dict[str, Any] = {"quantized": {"recall_exact_scan_below": 0},
                                 "hnsw": {"recall_exact_scan_below": 0,
                                          "recall_quantized_scan": False}}.get(plan, {})
    cfg = settings_for(embedding_dim=512, recall_candidates=1, **overrides)
    result = recall_by_vector(engine, user, QUERY, strategy=strategy,  # type: ignore[arg-type]
                              settings=cfg, k=3)
    assert result.plan in {plan, "mixed"}  # mixed: a pool plus a per-category completion
    got = {m.id: (m.sources, m.source_fallback) for m in result.memories}
    assert {i: got.get(i) for i in (cited, window, old)} == {
        cited: ((12, 15), False), window: ((3, 4, 5), True), old: (None, False)}
    as_dict = {m["id"]: (m["sources"], m["source_fallback"])
               for m in result.to_dict()["memories"]}
    assert as_dict[str(cited)] == ([12, 15], False) and as_dict[str(old)] == (None, False)
    json.dumps(result.to_dict())  # the eros.recall task's JSON result
    bare = recall_by_vector(engine, user, QUERY, strategy=strategy,  # type: ignore[arg-type]
                            settings=cfg, k=3, sources=False)
    assert [m.id for m in bare.memories] == [m.id for m in result.memories]
    assert all(m.sources is None for m in bare.memories)
