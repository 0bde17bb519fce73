"""classify end to end in-process: real PostgreSQL, real openai/voyageai SDKs, local fake APIs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Engine, text

from eros.dreaming.services.classify import Pipeline
from eros.errors import PermanentError, TransientError
from eros.settings import Settings
from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, FakeVoyageServer, Fault, Reply
from tests.support.classify import classify_session, fake_pipeline


@pytest.fixture
def pipeline(engine: Engine, provider_settings: Callable[..., Settings]) -> Pipeline:
    settings = provider_settings(
        llm_timeout_secs=2, embedding_timeout_secs=2, dreaming_transcript_budget_chars=2000)
    return fake_pipeline(settings, engine)


def _session(pipeline: Pipeline, sid):  # type: ignore[no-untyped-def]
    with pipeline.engine.connect() as conn:
        return conn.execute(text("SELECT * FROM engine.chat_sessions WHERE id = :i"),
                            {"i": sid}).one()


def _memories(pipeline: Pipeline, sid) -> list[tuple[str, str, float]]:  # type: ignore[no-untyped-def]
    with pipeline.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT content, category, importance FROM engine.companion_memories"
            " WHERE session_id = :i ORDER BY content"), {"i": sid})]


def test_memories_written_with_one_embedding_call(pipeline: Pipeline, llm: FakeLLMServer,
                                                  voyage: FakeVoyageServer) -> None:
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [
            mem_line("fact", 0.7, "Lives in Shanghai"),
            ("assistant", "MEM fact 0.9 The persona lives in Paris"),
            mem_line("Hobby", 0.4, "Likes jazz"),
            mem_line("relation", 3, "Mother wants her to marry"),
            mem_line("fact", 0.7, "lives in  shanghai."),  # duplicate within the extraction
            ("user", "control\x01chars \x7fare stripped from the prompt"),
        ])
    report = classify_session(pipeline, sid)
    assert report.outcome == "memories" and report.memories_written == 3
    assert _memories(pipeline, sid) == [("Likes jazz", "preference", 0.4),
                                        ("Lives in Shanghai", "fact", 0.7),
                                        ("Mother wants her to marry", "relation", 0.3)]
    assert voyage.request_count == 1
    body = voyage.requests[0].body
    assert body["input_type"] == "document" and body["output_dimension"] == 512
    # the three candidates and the user's five turns, in one request (issue 31)
    assert body["input"][:3] == ["Lives in Shanghai", "Likes jazz", "Mother wants her to marry"]
    assert len(body["input"]) == 3 + 5
    assert "MEM fact 0.9 The persona lives in Paris" not in body["input"]
    assert report.detail["turns_indexed"] == 5 and report.detail["embedding_requests"] == 1
    prompt = llm.requests[0].body["messages"][1]["content"]
    assert "\x01" not in prompt and "\x7f" not in prompt and "Session date:" in prompt
    session = _session(pipeline, sid)
    assert session.classified_at is not None and session.memory_count == 3
    assert session.prompt_tokens > 0 and session.embedding_tokens > 0
    assert session.model


def test_nul_bytes_and_unknown_categories_from_the_model(pipeline: Pipeline,
                                                         llm: FakeLLMServer) -> None:
    reply = ('{"memories": [{"content": "Works\\u0000 nights", "category": "Career",'
             ' "importance": "high", "domain": "wo\\u0000rk"}, {"content": "\\u0000 "},'
             ' {"category": "fact"}, {"content": "Likes tea", "category": "likes",'
             ' "importance": -3}]}')
    llm.script_replies([Reply(reply)])
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [("user", "I work nights and like tea")])
    report = classify_session(pipeline, sid)
    assert report.outcome == "memories" and report.detail["dropped"] == 2
    assert _memories(pipeline, sid) == [("Likes tea", "preference", 0.0),
                                        ("Works nights", "fact", 0.8)]
    with pipeline.engine.connect() as conn:
        meta = conn.execute(text("SELECT metadata FROM engine.companion_memories"
                                 " WHERE content = 'Works nights'")).scalar_one()
    assert meta["domain"] == "work" and meta["prompt_version"] == "extract_v5"


def test_empty_session_is_stamped_without_a_call(pipeline: Pipeline, llm: FakeLLMServer) -> None:
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [("system", "persona prompt"), ("user", "   ")])
    assert classify_session(pipeline, sid).outcome == "empty"
    assert llm.request_count == 0
    assert _session(pipeline, sid).classified_at is not None


@pytest.mark.parametrize(("token", "outcome"), [("REPLY_GARBAGE", "unparseable"),
                                                ("REPLY_EMPTY", "no_memories")])
def test_poison_replies_are_stamped_with_the_reason(pipeline: Pipeline, token: str,
                                                    outcome: str) -> None:
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [("user", token)])
    assert classify_session(pipeline, sid).outcome == outcome
    session = _session(pipeline, sid)
    assert session.classified_at is not None and session.outcome == outcome
    assert _memories(pipeline, sid) == []


def test_fenced_reply_is_parsed(pipeline: Pipeline) -> None:
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [("user", "REPLY_FENCED"),
                                 mem_line("event", 0.5, "Exam on Friday")])
    assert classify_session(pipeline, sid).outcome == "memories"
    assert _memories(pipeline, sid) == [("Exam on Friday", "event", 0.5)]


def test_truncated_reply_is_retried_once_with_a_larger_limit(pipeline: Pipeline,
                                                             llm: FakeLLMServer) -> None:
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [("user", "REPLY_TRUNCATE"), mem_line("fact", 0.6, "Is a nurse")])
    report = classify_session(pipeline, sid)
    assert report.outcome == "memories"
    assert [r.body["max_tokens"] for r in llm.requests] == [1500, 4000]
    assert _memories(pipeline, sid) == [("Is a nurse", "fact", 0.6)]


def test_truncated_twice_keeps_complete_items_and_says_so(pipeline: Pipeline,
                                                          llm: FakeLLMServer) -> None:
    cut = '{"memories": [{"content": "Has a cat", "category": "fact"}, {"content": "Lik'
    llm.script_replies([Reply(cut, finish_reason="length"), Reply(cut, finish_reason="length")])
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [("user", "I have a cat")])
    report = classify_session(pipeline, sid)
    assert report.outcome == "truncated"
    assert _memories(pipeline, sid) == [("Has a cat", "fact", None)]
    session = _session(pipeline, sid)
    assert session.classified_at is not None and "cut off" in session.last_error


@pytest.mark.parametrize("fault", [Fault.status(429, retry_after=7), Fault.status(503),
                                   Fault.drop(), Fault.hang(5)])
def test_network_faults_are_transient_and_leave_the_session_unstamped(
        pipeline: Pipeline, llm: FakeLLMServer, fault: Fault) -> None:
    llm.script([fault])
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "x")])
    with pytest.raises(TransientError) as info:
        classify_session(pipeline, sid)
    if fault.status == 429:
        assert info.value.retry_after == 7
    session = _session(pipeline, sid)
    assert session.classified_at is None and session.claim_token is not None
    assert _memories(pipeline, sid) == []


@pytest.mark.parametrize("status", [400, 401, 403, 422])
def test_permanent_provider_errors(pipeline: Pipeline, llm: FakeLLMServer, status: int) -> None:
    llm.script([Fault.status(status)])
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "x")])
    with pytest.raises(PermanentError) as info:
        classify_session(pipeline, sid)
    assert info.value.status == status


@pytest.mark.parametrize(("fault", "kind"), [(Fault.status(500), TransientError),
                                             (Fault.status(429), TransientError),
                                             (Fault.status(400), PermanentError)])
def test_embedding_errors_write_nothing(pipeline: Pipeline, voyage: FakeVoyageServer,
                                        fault: Fault, kind: type[Exception]) -> None:
    voyage.script([fault])
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "x")])
    with pytest.raises(kind):
        classify_session(pipeline, sid)
    assert _session(pipeline, sid).classified_at is None and _memories(pipeline, sid) == []


def test_wrong_vector_size_is_an_error_not_an_insert(pipeline: Pipeline,
                                                     voyage: FakeVoyageServer) -> None:
    voyage.wrong_dim = 256
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "x")])
    with pytest.raises(PermanentError, match="256 dimensions"):
        classify_session(pipeline, sid)
    assert _memories(pipeline, sid) == []


def test_oversized_transcript_is_trimmed_to_the_newest_turns(pipeline: Pipeline,
                                                             llm: FakeLLMServer) -> None:
    turns = [("user", f"old filler turn number {i} " + "x" * 80) for i in range(200)]
    turns.append(mem_line("fact", 0.5, "Newest fact"))
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, turns)
    report = classify_session(pipeline, sid)
    sent = llm.requests[0].body["messages"][1]["content"]
    assert len(sent) <= 2000 + 200
    assert "Newest fact" in sent and "old filler turn number 0 " not in sent
    assert "earlier turns omitted" in sent
    assert report.detail["turns_trimmed"] > 150
    assert _memories(pipeline, sid) == [("Newest fact", "fact", 0.5)]


def test_cost_is_recorded_per_attempt_and_aggregated_by_the_views(pipeline: Pipeline) -> None:
    from eros.memory.db import queries

    with pipeline.engine.begin() as conn:
        first = add_session(conn, [mem_line("fact", 0.5, "Has two cats")])
        second = add_session(conn, [mem_line("fact", 0.5, "Drinks oolong")])
    classify_session(pipeline, first)
    classify_session(pipeline, second)
    with pipeline.engine.connect() as conn:
        runs = conn.execute(text("SELECT prompt_tokens, completion_tokens, embedding_tokens,"
                                 " cost_usd FROM engine.classification_runs")).all()
        assert len(runs) == 2
        for r in runs:
            expected = (r.prompt_tokens * 1.0 + r.completion_tokens * 5.0
                        + r.embedding_tokens * 0.02) / 1e6
            assert r.prompt_tokens > 0 and float(r.cost_usd) == pytest.approx(expected)
        total = sum(float(r.cost_usd) for r in runs)
        report = queries.cost_report(conn)
    assert report["daily"][0]["runs"] == 2 and report["daily"][0]["sessions"] == 2
    assert report["daily"][0]["cost_usd"] == pytest.approx(total)
    assert report["per_session_usd"] == pytest.approx(total / 2)
    assert report["active_users_30d"] == 2
    assert report["per_user_month_usd"] == pytest.approx(total / 2)
