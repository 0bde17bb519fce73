"""The pure half of ``eros eval``: the shipped suite, the LoCoMo/LongMemEval loaders, scoring
and the table."""

from __future__ import annotations

import json

import pytest

from eros.evaluation.core.formats import convert
from eros.evaluation.core.scoring import BASELINE, aggregate, render_table, score
from eros.evaluation.core.suite import (
    QUESTION_TYPES,
    Question,
    References,
    SuiteError,
    load_suite_text,
    shipped_suite,
)


def test_shipped_suite_is_big_enough_bilingual_and_its_evidence_is_said_by_the_user() -> None:
    suite = shipped_suite()
    assert len(suite.users) >= 10 and all(len(u.sessions) >= 10 for u in suite.users)
    assert {u.language for u in suite.users} == {"en", "zh"}
    assert {q.type for q in suite.questions} == set(QUESTION_TYPES)
    updates = [q for q in suite.questions if q.type == "knowledge-update"]
    assert len(updates) >= 20 and all(q.stale for q in updates)
    for user in suite.users:
        ends = [s.ended_at for s in user.sessions]
        assert ends == sorted(ends)  # sessions in time order


LOCOMO = [{"sample_id": "conv-1", "conversation": {
    "speaker_a": "Caroline", "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": "I moved to Berlin."},
                  {"speaker": "Melanie", "dia_id": "D1:2", "text": "I paint sunrises."}],
    "session_2_date_time": "9:00 am on 20 June, 2023",
    "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "I adopted a dog."},
                  {"speaker": "Melanie", "dia_id": "D2:2", "text": "", "img_url": ["x.jpg"]}]},
    "qa": [{"question": "Where did Caroline move?", "answer": "Berlin", "evidence": ["D1:1"],
            "category": 4},
           {"question": "What does Melanie paint and own?", "answer": "sunrises, a dog",
            "evidence": ["D1:2", "D2:1"], "category": 1},
           {"question": "What did Caroline adopt?", "adversarial_answer": "a dog",
            "evidence": ["D2:1"], "category": 5}]}]


def test_locomo_replays_each_speaker_as_the_user_and_keeps_evidence_text() -> None:
    suite = convert(LOCOMO, "locomo")
    assert [u.name for u in suite.users] == ["Caroline", "Melanie"]
    caroline, melanie = suite.users
    assert [t.role for t in caroline.sessions[0].turns] == ["user", "assistant"]
    assert [t.role for t in melanie.sessions[0].turns] == ["assistant", "user"]
    assert caroline.sessions[0].turns[0].at.isoformat() == "2023-05-08T13:56:00+00:00"
    assert len(melanie.sessions[1].turns) == 1  # the image-only turn has no text to read
    single, multi, adversarial = suite.questions
    assert single.user == caroline.id and single.evidence == ["I moved to Berlin."]
    assert multi.type == "multi-hop" and multi.user == melanie.id and len(multi.evidence) == 2
    assert adversarial.type == "adversarial" and adversarial.evidence == []


LME = [{"question_id": "q1", "question_type": "knowledge-update",
        "question": "Where do I live now?", "answer": "Tokyo",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/06/01 (Thu) 10:00"],
        "haystack_sessions": [[{"role": "user", "content": "I live in Shanghai."},
                               {"role": "assistant", "content": "Nice."}],
                              [{"role": "user", "content": "I moved to Tokyo.",
                                "has_answer": True}]]},
       {"question_id": "q2_abs", "question_type": "single-session-user",
        "question": "What is my dog's name?", "answer": "unknown",
        "haystack_session_ids": ["s3"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [[{"role": "user", "content": "I have a cat."}]]}]


def test_longmemeval_items_become_users_with_marked_evidence() -> None:
    suite = convert(LME, "longmemeval")
    assert len(suite.users) == 2 and len(suite.users[0].sessions) == 2
    update, abstain = suite.questions
    assert update.type == "knowledge-update" and update.evidence == ["I moved to Tokyo."]
    assert abstain.type == "adversarial" and abstain.evidence == []


@pytest.mark.parametrize(("document", "fmt", "message"), [
    ({"users": []}, "locomo", "expected a non-empty JSON list"),
    ([{"conversation": {}}], "locomo", "not a locomo file: KeyError"),
    ([{"question_id": "x"}], "longmemeval", "not a longmemeval file"),
    ({"name": "x", "users": [], "questions": []}, "eros", "users"),
])
def test_bad_files_are_named_errors(document: object, fmt: str, message: str) -> None:
    with pytest.raises(SuiteError, match=message):
        convert(document, fmt)  # type: ignore[arg-type]
    with pytest.raises(SuiteError, match="not JSON: line 1"):
        load_suite_text("{oops")


def test_question_needs_evidence_unless_adversarial() -> None:
    with pytest.raises(ValueError, match="needs evidence"):
        Question(id="q", user="u", type="single-hop", question="?")


def q(kind: str = "knowledge-update", **kw: object) -> Question:
    base: dict[str, object] = {"id": "q", "user": "u", "type": kind, "question": "where?",
                               "evidence": ["Lives in Tokyo"], "stale": ["Lives in Shanghai"]}
    return Question.model_validate(base | kw)


def test_score_recall_stale_first_and_duplicates() -> None:
    question = q()
    refs = References.of([question, q(kind="single-hop", evidence=["Has a cat"], stale=[])])
    assert refs.statements == ("Lives in Tokyo", "Lives in Shanghai", "Has a cat")
    stale_on_top = score(question, refs, "grouped",
                         ["lives in shanghai", "Lives in Shanghai!", "Moved to Tokyo", "x"],
                         [1, 1, 0, None])
    assert stale_on_top.hit is True and stale_on_top.stale_first is True
    assert stale_on_top.duplicate_share == 0.25
    current_first = score(question, refs, "decay", ["Moved to Tokyo", "Lives in Shanghai"],
                          [0, 1])
    assert current_first.stale_first is False and current_first.duplicate_share == 0.0
    missing = score(question, refs, BASELINE, ["Has a cat"], [2])
    assert missing.hit is False and missing.stale_first is False
    cells = aggregate([stale_on_top, current_first, missing])
    assert cells["grouped"]["all"].stale_first == 1.0
    assert cells[BASELINE]["knowledge-update"].recall == 0.0
    table = render_table(cells, 10)
    assert "recall@10" in table and "× base" in table and "baseline" in table
    multi = score(q(kind="multi-hop", evidence=["Lives in Tokyo", "Has a cat"], stale=[]),
                  refs, "decay", ["Moved to Tokyo"], [0])
    assert multi.hit is False  # a multi-hop question needs every statement
    assert json.dumps(cells["decay"]["all"].__dict__)
