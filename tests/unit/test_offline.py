"""Offline providers and the bundled sample corpus: no network, no keys, deterministic."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections import Counter
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eros
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.providers.offline.hashing import LocalEmbedder, OfflineEmbeddings, hash_embedding
from eros.providers.offline.heuristic import (
    OfflineCompletion,
    OfflineExtractor,
    heuristic_extract,
    user_turns,
)

CORPUS = Path(eros.__file__).resolve().parent / "data" / "sample_corpus.jsonl"
CATEGORIES = {"fact", "preference", "event", "emotion", "relation"}
CJK = re.compile(r"[\u4e00-\u9fff]")
WINDOW_START = datetime(2026, 10, 1, tzinfo=UTC)  # 60 days before 2026-12-01
IDLE_CUTOFF = datetime(2026, 12, 2, tzinfo=UTC) - timedelta(hours=1)


def load_corpus() -> list[dict[str, Any]]:
    with CORPUS.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def render(messages: list[dict[str, Any]], date: datetime | None = None) -> str:
    """The documented transcript format: header, ``---``, one turn per line, continuations
    indented by two spaces."""
    first_sent = messages[0]["sent_at"] if messages else "2026-11-02T10:00:00+00:00"
    day = date or datetime.fromisoformat(first_sent)
    lines = [f"Session date: {day:%Y-%m-%d (%A)}", "---"]
    for message in messages:
        first, *rest = message["content"].split("\n")
        lines.append(f"{message['role']}: {first}")
        lines.extend(f"  {line}" for line in rest)
    return "\n".join(lines)


def transcript(*turns: tuple[str, str]) -> str:
    return render([{"role": r, "content": c, "sent_at": "2026-11-02T10:00:00+00:00"}
                   for r, c in turns])


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


SESSIONS = load_corpus()


# --- the corpus -----------------------------------------------------------------------------

@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s["session_id"][:8])
def test_corpus_line_is_valid(session: dict[str, Any]) -> None:
    assert set(session) <= {"session_id", "user_id", "instance_id", "last_active_at", "messages"}
    assert {"session_id", "user_id", "instance_id", "messages"} <= set(session)
    uuid.UUID(session["session_id"])
    uuid.UUID(session["user_id"])
    assert session["instance_id"] is None or uuid.UUID(session["instance_id"])
    messages = session["messages"]
    assert 1 <= len(messages) <= 30
    times = []
    for message in messages:
        assert set(message) == {"role", "content", "sent_at"}
        assert message["role"] in {"user", "assistant"}
        assert isinstance(message["content"], str) and message["content"].strip()
        sent = datetime.fromisoformat(message["sent_at"])
        assert sent.tzinfo is not None and sent.utcoffset() is not None
        times.append(sent)
    assert times == sorted(times)
    last = times[-1]
    if "last_active_at" in session:
        active = datetime.fromisoformat(session["last_active_at"])
        assert active.tzinfo is not None and active >= last
        last = active
    assert times[0] >= WINDOW_START and last <= IDLE_CUTOFF


def test_corpus_shape() -> None:
    assert 35 <= len(SESSIONS) <= 45
    assert len({s["session_id"] for s in SESSIONS}) == len(SESSIONS)
    assert len({s["user_id"] for s in SESSIONS}) == 6
    assert len({s["instance_id"] for s in SESSIONS} - {None}) == 3
    user_text: dict[str, list[str]] = {}
    for s in SESSIONS:
        user_text.setdefault(s["user_id"], []).extend(
            m["content"] for m in s["messages"] if m["role"] == "user")
    chinese = {u for u, texts in user_text.items() if any(CJK.search(t) for t in texts)}
    mixed = {u for u, texts in user_text.items()
             if any(CJK.search(t) and len(re.findall(r"[A-Za-z]{2,}", t)) >= 3 for t in texts)}
    assert len(chinese) >= 2 and mixed
    assert any(len(s["messages"]) == 1 for s in SESSIONS)


def test_corpus_is_deterministic_bytes() -> None:
    """One object per line, no blank lines, stable UUIDs (uuid5), so tests can pin on it."""
    raw = CORPUS.read_text(encoding="utf-8")
    assert raw.endswith("\n") and "\n\n" not in raw
    assert all(uuid.UUID(s["session_id"]).version == 5 for s in SESSIONS)


# --- heuristic_extract over the corpus ------------------------------------------------------

def _check_memories(memories: list[dict[str, Any]]) -> None:
    assert len(memories) <= 10
    contents = [m["content"] for m in memories]
    assert len(set(contents)) == len(contents)
    for m in memories:
        assert set(m) - {"sensitivity"} == {"content", "category", "importance", "layer",
                                            "evidence_type", "confidence"}
        assert m.get("sensitivity", "health") in SENSITIVITY_LABELS
        assert m["category"] in CATEGORIES
        assert 0.0 <= m["importance"] <= 1.0 and 0.0 <= m["confidence"] <= 1.0
        assert m["evidence_type"] == "explicit"
        assert isinstance(m["content"], str) and m["content"].strip()


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s["session_id"][:8])
def test_extract_over_corpus_session(session: dict[str, Any]) -> None:
    messages = session["messages"]
    memories = heuristic_extract(render(messages))
    _check_memories(memories)
    # Assistant turns change nothing: the output equals that of the user turns alone.
    user_only = [m for m in messages if m["role"] == "user"]
    assert memories == heuristic_extract(render(user_only))
    # And nothing that only the persona said about itself shows up.
    persona_as_user = [{**m, "role": "user"} for m in messages if m["role"] == "assistant"]
    persona_only = {m["content"] for m in heuristic_extract(render(persona_as_user))}
    from_user = {m["content"] for m in heuristic_extract(render(user_only))}
    assert not ({m["content"] for m in memories} & (persona_only - from_user))


def test_corpus_covers_all_categories_and_never_credits_persona_facts() -> None:
    counts: Counter[str] = Counter()
    contents: list[str] = []
    for session in SESSIONS:
        for m in heuristic_extract(render(session["messages"])):
            counts[m["category"]] += 1
            contents.append(m["content"])
    assert set(counts) == CATEGORIES
    joined = "\n".join(contents)
    for persona_fact in ("Lives in Paris", "bookshop", "radio host", "Is from Lisbon", "杭州",
                         "Camille", "下雨天", "jazz record"):
        assert persona_fact not in joined
    # The user facts that consolidation is meant to see repeated, then changed.
    assert contents.count("Lives in Shanghai") >= 2
    assert "Moved to Tokyo last week" in contents


# --- named examples -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "category", "content"), [
    ("I live in Shanghai.", "fact", "Lives in Shanghai"),
    ("Honestly, I'm from Chengdu", "fact", "Is from Chengdu"),
    ("I work as a nurse in the ER", "fact", "Works as a nurse in the ER"),
    ("My name is Emma Walsh", "fact", "Name is Emma Walsh"),
    ("I moved to Tokyo last month!", "fact", "Moved to Tokyo last month"),
    ("I love spicy food", "preference", "Loves spicy food"),
    ("I hate cilantro", "preference", "Hates cilantro"),
    ("I prefer aisle seats", "preference", "Prefers aisle seats"),
    ("my favorite band is Radiohead", "preference", "Favorite band is Radiohead"),
    ("Yesterday, I went to the beach", "event", "Went to the beach yesterday"),
    ("I just finished my first marathon", "event", "Just finished their first marathon"),
    ("I'm so tired", "emotion", "Feels so tired"),
    ("I feel lonely in the evenings", "emotion", "Feels lonely in the evenings"),
    ("My mother wants me to marry", "relation", "User's mother wants them to marry"),
    ("I love my mom so much", "relation", "Loves their mom so much"),
    ("My boss yelled at me again", "relation", "User's boss yelled at them again"),
    ("我住在上海", "fact", "住在上海"),
    ("我在腾讯工作", "fact", "在腾讯工作"),
    ("我是武汉大学的学生", "fact", "是武汉大学的学生"),
    ("我喜欢吃火锅", "preference", "喜欢吃火锅"),
    ("我讨厌下雨天", "preference", "讨厌下雨天"),
    ("我昨天去看了演唱会", "event", "昨天去看了演唱会"),
    ("我好累", "emotion", "好累"),
    ("我很难过", "emotion", "很难过"),
    ("最近压力好大", "emotion", "最近压力好大"),
    ("我妈又催我结婚了，好烦", "relation", "我妈又催我结婚了，好烦"),
    ("我和男朋友分手了", "relation", "和男朋友分手了"),
    ("老板今天又骂我了", "relation", "老板今天又骂我了"),
    ("说实话 I'm so burnt out", "emotion", "Feels so burnt out"),
])
def test_named_examples(text: str, category: str, content: str) -> None:
    memories = heuristic_extract(transcript(("user", text)))
    assert [(m["category"], m["content"]) for m in memories] == [(category, content)]


def test_relation_importance_beats_preference() -> None:
    [rel] = heuristic_extract(transcript(("user", "my sister is visiting next week")))
    [pref] = heuristic_extract(transcript(("user", "I enjoy long walks")))
    assert rel["category"] == "relation" and pref["category"] == "preference"
    assert rel["importance"] > pref["importance"]


def test_persona_lines_are_never_the_users() -> None:
    text = transcript(("assistant", "I live in Paris, and I love jazz. My sister is a chef."),
                      ("user", "hi there, how are you doing"),
                      ("assistant", "我住在杭州，我喜欢下雨天"))
    assert heuristic_extract(text) == []


def test_questions_fillers_and_you_statements_are_skipped() -> None:
    text = transcript(("user", "Do you like ramen?"), ("user", "ok lol"), ("user", "嗯嗯"),
                      ("user", "你住在哪里？"), ("user", "你是不是也喜欢猫"),
                      ("user", "You live in Paris right"), ("user", "I love you"),
                      ("user", "Where do I even start"))
    assert heuristic_extract(text) == []


def test_continuation_lines_belong_to_their_turn() -> None:
    text = transcript(("user", "long day\nI feel exhausted\n  really"),
                      ("assistant", "rest well\nI live in Paris"))
    assert user_turns(text) == ["long day\nI feel exhausted\nreally"]
    assert [m["content"] for m in heuristic_extract(text)] == ["Feels exhausted"]
    # A blank line inside a message is an indented blank line; the turn goes on after it.
    gap = transcript(("user", "hello there friend\n\nI live in Lyon"))
    assert "\n  \n" in gap and user_turns(gap) == ["hello there friend\nI live in Lyon"]
    assert [m["content"] for m in heuristic_extract(gap)] == ["Lives in Lyon"]


def test_text_around_the_transcript_is_not_credited_to_the_user() -> None:
    prompt = ("Extract memories.\n" + transcript(("user", "I live in Lyon"))
              + "\nI live in Rome\nRules: I love JSON")
    assert [m["content"] for m in heuristic_extract(prompt)] == ["Lives in Lyon"]


def test_cap_keeps_the_ten_most_important_in_transcript_order() -> None:
    turns = [("user", f"I like flavour number {i}") for i in range(12)]
    turns.insert(6, ("user", "My dad is a mechanic"))
    memories = heuristic_extract(transcript(*turns))
    assert len(memories) == 10
    assert memories[6]["category"] == "relation"  # kept, and still in its place
    assert [m["content"] for m in memories[:6]] == [
        f"Likes flavour number {i}" for i in range(6)]


def test_duplicates_collapse() -> None:
    text = transcript(("user", "I live in Shanghai."), ("user", "i live in shanghai!!"),
                      ("user", "I live in Shanghai, near the Bund"))
    assert [m["content"] for m in heuristic_extract(text)] == ["Lives in Shanghai"]


def test_offline_extractor_returns_json_completion() -> None:
    extractor = OfflineExtractor()
    assert extractor.name == "offline-heuristic"
    user = transcript(("user", "I live in Shanghai"), ("user", "我喜欢吃火锅"))
    done = extractor.complete("system prompt", user, max_tokens=1000)
    assert isinstance(done, OfflineCompletion) and done.finish_reason == "stop"
    assert done.model == "offline-heuristic"
    assert json.loads(done.text) == {"memories": heuristic_extract(user)}
    assert "火锅" in done.text  # ensure_ascii=False
    assert done.prompt_tokens == (len("system prompt") + len(user)) // 4
    assert done.completion_tokens == len(done.text) // 4
    with pytest.raises(FrozenInstanceError):
        done.text = "x"  # type: ignore[misc]
    tight = extractor.complete("", user, max_tokens=20)
    assert len(json.loads(tight.text)["memories"]) < 2  # trimmed, still whole JSON


# --- hash_embedding -------------------------------------------------------------------------

def test_embedding_is_deterministic_unit_and_sized() -> None:
    for dim in (1, 8, 512, 1024):
        a = hash_embedding("Lives in Shanghai", dim)
        assert a == hash_embedding("Lives in Shanghai", dim)
        assert len(a) == dim
        assert math.isclose(math.sqrt(sum(x * x for x in a)), 1.0, rel_tol=1e-9)


def test_embedding_similar_beats_dissimilar() -> None:
    dim = 512
    base = hash_embedding("Lives in Shanghai", dim)
    near = hash_embedding("Still lives in Shanghai with a cat", dim)
    far = hash_embedding("Hates cilantro on noodles", dim)
    assert cosine(base, near) > 0.3 > cosine(base, far)
    zh = hash_embedding("住在上海", dim)
    assert cosine(zh, hash_embedding("我现在住在上海", dim)) > cosine(
        zh, hash_embedding("喜欢吃火锅", dim))
    assert cosine(base, hash_embedding("lives in SHANGHAI!", dim)) > 0.99  # case, punctuation


@pytest.mark.parametrize("text", ["", "   ", "!!! ...", "\n\t"])
def test_embedding_of_featureless_text_is_e0(text: str) -> None:
    assert hash_embedding(text, 16) == [1.0] + [0.0] * 15


def test_embedding_rejects_bad_dim() -> None:
    with pytest.raises(ValueError):
        hash_embedding("x", 0)
    with pytest.raises(ValueError):
        LocalEmbedder(0)


def test_local_embedder() -> None:
    embedder = LocalEmbedder(dim=64)
    assert embedder.name == "local-hash"
    out = embedder.embed(["Lives in Shanghai", "", "喜欢吃火锅"], input_type="document")
    assert isinstance(out, OfflineEmbeddings) and out.model == "local-hash"
    assert out.vectors == [hash_embedding(t, 64) for t in ["Lives in Shanghai", "", "喜欢吃火锅"]]
    assert out.total_tokens == len("Lives in Shanghai") // 4 + len("喜欢吃火锅") // 4
    assert embedder.embed(["a b"], "query").vectors == embedder.embed(["a b"], "document").vectors
    assert embedder.embed([], "query").vectors == []


# --- properties -----------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.text())
def test_extract_never_raises_on_arbitrary_text(text: str) -> None:
    _check_memories(heuristic_extract(text))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.text(max_size=200)),
                max_size=15))
def test_extract_never_raises_on_arbitrary_transcripts(turns: list[tuple[str, str]]) -> None:
    _check_memories(heuristic_extract(transcript(*turns)))


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=64))
def test_embedding_is_never_nan(text: str, dim: int) -> None:
    vec = hash_embedding(text, dim)
    assert len(vec) == dim and all(math.isfinite(x) for x in vec)
    assert math.isclose(math.sqrt(sum(x * x for x in vec)), 1.0, rel_tol=1e-9)
