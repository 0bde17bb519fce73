"""The ``fused`` strategy against real PostgreSQL + pgvector: memories and the user's turns
(``engine.memory_turns``, written through ``turns_sql.write_turns``) ranked together by
provenance. Vectors are built so each similarity to the query is known (tests/support)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, text

from eros.recall import RecallResult, recall_by_vector
from eros.recall.db import turns_sql
from eros.recall.services.recall import RecalledMemory, RecalledTurn
from eros.settings import load_settings
from tests.support.memories import QUERY, Mem, add, at_cosine

NOW = datetime.now(UTC)


def cfg(**overrides: Any) -> Any:
    return load_settings(embedding_dim=512, **overrides)


def session(conn: Connection, user: uuid.UUID, *said: tuple[str, list[float], float],
            sensitivity: str | None = None, persona: uuid.UUID | None = None) -> list[int]:
    """One session of user turns (content, vector, age in days), indexed; their seqs."""
    sid = uuid.uuid4()
    conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id, instance_id, "
                      "last_active_at) VALUES (:s, :u, :i, now())"),
                 {"s": sid, "u": user, "i": persona})
    seqs, rows = [], []
    for content, vector, age in said:
        when = NOW - timedelta(days=age)
        seq = conn.execute(text(
            "INSERT INTO engine.chat_messages (session_id, role, content, sent_at) VALUES "
            "(:s, 'user', :c, :at) RETURNING seq"), {"s": sid, "c": content, "at": when}
        ).scalar_one()
        seqs.append(seq)
        rows.append(turns_sql.TurnRow(seq, sid, user, persona, when, vector, "test",
                                      sensitivity))
    turns_sql.write_turns(conn, rows)
    return seqs


def cite(conn: Connection, memory: uuid.UUID, seqs: list[int]) -> None:
    conn.execute(text("UPDATE engine.companion_memories SET source_seqs = :s WHERE id = :m"),
                 {"s": seqs, "m": memory})


def run(engine: Engine, user: uuid.UUID, **kwargs: Any) -> RecallResult:
    settings = kwargs.pop("settings", cfg())
    return recall_by_vector(engine, user, QUERY, strategy="fused", settings=settings, now=NOW,
                            **kwargs)


def kinds(result: RecallResult) -> list[str]:
    return [f"{i.kind}:{i.content}" for i in result.items]


@pytest.fixture
def user() -> uuid.UUID:
    return uuid.uuid4()


def test_memories_and_turns_in_one_list_each_said_once(engine: Engine, user: uuid.UUID) -> None:
    with engine.begin() as conn:
        adopted, chatter = session(conn, user,
                                   ("we adopted a cat called Mochi today!", at_cosine(0.80, 1), 40),
                                   ("I painted the fence purple", at_cosine(0.90, 2), 40))
        (cat,) = add(conn, NOW, Mem(user, "adopted a cat named Mochi", "event",
                                    at_cosine(0.85, 3), importance=0.5, age_days=40))
        cite(conn, cat, [adopted])
    result = run(engine, user)
    # each kind's best meets the other's (rank calibration): the memory first, then the turn
    assert kinds(result) == ["memory:adopted a cat named Mochi", "turn:I painted the fence purple"]
    memory = result.memories[0]
    assert isinstance(memory, RecalledMemory) and memory.sources == (adopted,)
    assert [q.seq for q in memory.quotes] == [adopted]  # the cited turn is its quote
    turn = result.turns[0]
    assert isinstance(turn, RecalledTurn) and turn.seq == chatter
    assert turn.said_at.date() == (NOW - timedelta(days=40)).date()
    payload = result.to_dict()
    assert [i["kind"] for i in payload["items"]] == ["memory", "turn"]
    assert payload["turns"][0]["seq"] == chatter and payload["memories"][0]["quotes"] == [adopted]
    prompt = result.render("en", dated=True)
    assert "The user said on" in prompt and "\u201cI painted the fence purple\u201d" in prompt


def test_a_turn_only_a_superseded_memory_cites_does_not_bring_the_old_fact_back(
        engine: Engine, user: uuid.UUID) -> None:
    with engine.begin() as conn:
        old, new, _ = session(conn, user, ("I live in Shanghai", at_cosine(0.86, 1), 300),
                              ("I just moved to Tokyo", at_cosine(0.80, 2), 5),
                              ("I like tea", at_cosine(0.5, 5), 5))
        shanghai, tokyo = add(
            conn, NOW, Mem(user, "lives in Shanghai", "fact", at_cosine(0.84, 3),
                           importance=0.7, age_days=300, status="superseded"),
            Mem(user, "lives in Tokyo", "fact", at_cosine(0.60, 4), importance=0.7, age_days=5))
        cite(conn, shanghai, [old])
        cite(conn, tokyo, [new])
    result = run(engine, user)
    assert kinds(result) == ["memory:lives in Tokyo", "turn:I like tea",
                             "turn:I live in Shanghai"]
    assert [q.seq for q in result.memories[0].quotes] == [new]
    undemoted = run(engine, user, settings=cfg(recall_fusion_stale_penalty=0))
    assert kinds(undemoted) == ["memory:lives in Tokyo", "turn:I live in Shanghai",
                                "turn:I like tea"]
    assert old in [t.seq for t in undemoted.turns]


def test_the_token_budget_and_k_cap_the_answer(engine: Engine, user: uuid.UUID) -> None:
    with engine.begin() as conn:
        session(conn, user, *[(f"turn {i} " + "blah " * 80, at_cosine(0.9 - i / 100, i + 1), 3)
                              for i in range(6)])
        add(conn, NOW, *[Mem(user, f"short fact {i}", "fact", at_cosine(0.7, 20 + i),
                             importance=0.5) for i in range(6)])
    small = run(engine, user, settings=cfg(recall_token_budget=300))
    assert small.budget == 300
    assert sum(i.kind == "turn" for i in small.items) < 6
    assert all(m.content.startswith("short fact") for m in small.memories)
    assert len(run(engine, user, k=3).items) == 3
    from eros.core.text import estimate_tokens
    assert estimate_tokens(small.render("en", dated=True)) <= 300


def test_sensitive_turns_are_left_out_when_asked(engine: Engine, user: uuid.UUID) -> None:
    with engine.begin() as conn:
        session(conn, user, ("my diagnosis came back", at_cosine(0.9, 1), 3),
                sensitivity="health")
        session(conn, user, ("I like jazz", at_cosine(0.5, 2), 3))
    assert [t.content for t in run(engine, user).turns] == ["my diagnosis came back",
                                                             "I like jazz"]
    assert [t.content for t in run(engine, user, include_sensitive=False).turns] == [
        "I like jazz"]


def test_other_users_turns_are_never_recalled(engine: Engine, user: uuid.UUID) -> None:
    with engine.begin() as conn:
        session(conn, uuid.uuid4(), ("someone else's secret", at_cosine(0.99, 1), 1))
    assert run(engine, user).items == []


def test_a_turn_is_recalled_only_in_its_own_conversation(engine: Engine,
                                                         user: uuid.UUID) -> None:
    """Turns have no profile layer: said to one persona, recalled only talking to it."""
    mine, other = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        session(conn, user, ("told you about my new job", at_cosine(0.9, 1), 2), persona=mine)
        session(conn, user, ("told the other one a secret", at_cosine(0.9, 2), 2),
                persona=other)
    assert [t.content for t in run(engine, user, instance_id=mine).turns] == [
        "told you about my new job"]
    assert run(engine, user).turns == []  # no persona: the conversations without one
