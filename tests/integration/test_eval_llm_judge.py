"""The LLM judge through the real openai SDK against the fake chat server: one call maps the
memories to statements, and with answers on, one call answers and one grades."""

from __future__ import annotations

import json
from typing import Any

from eros.evaluation.core.suite import Question, References
from eros.evaluation.services.judges import LLMJudge
from eros.providers.llm import OpenRouterChat
from eros.settings import load_settings
from testkit.fakes import FakeLLMServer
from testkit.fakes.llm_server import Reply, last_user_text


def responder(request: dict[str, Any]) -> Reply:
    system = request["messages"][0]["content"]
    if system.startswith("You grade a memory system"):
        assert "[1] Lives in Tokyo" in last_user_text(request)
        return Reply(json.dumps({"memories": {"1": 1, "2": 0, "3": 9}}))
    if system.startswith("You are a companion"):
        return Reply("She lives in Tokyo now.")
    return Reply('{"correct": true}')


def test_llm_judge_maps_answers_and_grades(llm: FakeLLMServer) -> None:
    llm.set_responder(responder)
    settings = load_settings(openrouter_api_key="k", openrouter_base_url=llm.url)
    question = Question(id="q", user="u", type="knowledge-update", question="Where now?",
                        evidence=["Lives in Tokyo"], stale=["Lives in Shanghai"],
                        answer="Tokyo")
    judge = LLMJudge(OpenRouterChat(settings), answers=True)
    verdict = judge.judge(question, References.of([question]),
                          ["Moved to Tokyo", "Likes jazz", "Has a cat"])
    assert verdict.assigned == [0, None, None]  # 9 names no statement: ignored
    assert verdict.answer_correct is True
    assert judge.llm_calls == 3 and len(llm.requests) == 3
