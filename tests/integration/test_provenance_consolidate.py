"""Consolidation carries provenance (issue 24): a canonical memory — a new row, or a member
kept as the result — holds the union of its members' sources (merged and superseded), flagged
when any member was a fallback. Real PostgreSQL, the real SDKs against the fake APIs."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, text

from eros.consolidation.services.consolidate import Consolidator, consolidate
from testkit.fakes import FakeLLMServer, Reply

DIM = 512
NOW = datetime.now(UTC)


def _axis(i: int, j: int | None = None, cos: float = 1.0) -> list[float]:
    vec = [0.0] * DIM
    vec[i] = cos
    if j is not None:
        vec[j] = (1 - cos * cos) ** 0.5
    return vec


def _add(engine: Engine, user: uuid.UUID, content: str, vector: list[float],
         seqs: list[int] | None, *, fallback: bool = False, days_ago: float,
         category: str = "fact") -> uuid.UUID:
    with engine.begin() as conn:
        return conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, importance,"
            " embedding, created_at, source_seqs, source_fallback)"
            " VALUES (:u, :c, :k, 0.6, :e, :t, :s, :f) RETURNING id"),
            {"u": user, "c": content, "k": category, "e": str(vector), "s": seqs,
             "f": fallback, "t": NOW - timedelta(days=days_ago)}).scalar_one()


def _current(engine: Engine, user: uuid.UUID) -> dict[str, tuple[list[int] | None, bool]]:
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT content, source_seqs, source_fallback FROM engine.companion_memories"
            " WHERE user_id = :u AND status = 'current'"), {"u": user}).all()
    return {r.content: (r.source_seqs, r.source_fallback) for r in rows}


def _answer(number: int, content: str, dup: list[int], sup: list[int] = (),
            category: str = "fact") -> dict[str, Any]:
    return {"cluster": number, "canonical": {"content": content, "category": category,
                                             "importance": 0.8},
            "duplicates": dup, "superseded": list(sup), "separate": []}


def test_exact_copies_leave_the_kept_copy_with_the_union(consolidator: Consolidator,
                                                         engine: Engine) -> None:
    user = uuid.uuid4()
    _add(engine, user, "Lives in Lyon", _axis(0), [7, 9], days_ago=5)
    _add(engine, user, "lives in lyon.", _axis(0), None, days_ago=4)  # before provenance
    _add(engine, user, "Lives in  Lyon", _axis(0), [5, 7], days_ago=3)  # kept: the newest
    _add(engine, user, "Has a cat", _axis(1), [2], fallback=True, days_ago=3)
    assert consolidate(consolidator, user).merged == 2
    assert _current(engine, user) == {"Lives in  Lyon": ([5, 7, 9], False),
                                      "Has a cat": ([2], True)}


def test_a_new_canonical_row_unions_merged_and_superseded_members_flagged_by_any(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    user = uuid.uuid4()
    _add(engine, user, "Lives in Lyon", _axis(0), [40, 3], days_ago=400)
    _add(engine, user, "Moved to Paris", _axis(0, 1, cos=0.9), [88], days_ago=9)
    _add(engine, user, "Now lives in Paris", _axis(0, 2, cos=0.92), [90, 91], fallback=True,
         days_ago=7)
    llm.script_replies([Reply(json.dumps({"clusters": [
        _answer(1, "Moved from Lyon to Paris", [2, 3], [1])]}))])
    report = consolidate(consolidator, user)
    assert (report.canonical_written, report.merged, report.superseded) == (1, 2, 1)
    assert _current(engine, user) == {"Moved from Lyon to Paris": ([3, 40, 88, 90, 91], True)}


def test_a_member_kept_as_the_canonical_takes_the_union_and_unknown_stays_null(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    user = uuid.uuid4()
    _add(engine, user, "Likes jazz", _axis(2), [11], days_ago=20, category="preference")
    _add(engine, user, "Really enjoys jazz music", _axis(2, 3, 0.95), [4, 12], days_ago=5,
         category="preference")
    _add(engine, user, "Has a dog", _axis(4), None, days_ago=9)
    _add(engine, user, "Owns a dog named Rex", _axis(4, 5, 0.9), None, days_ago=2)
    llm.script_replies([Reply(json.dumps({"clusters": [
        _answer(1, "Has a dog named Rex", [1, 2]),
        _answer(2, "Likes jazz", [3, 4], category="preference")]}))])
    report = consolidate(consolidator, user)
    assert (report.merged, report.canonical_written) == (3, 1)
    assert _current(engine, user) == {"Likes jazz": ([4, 11, 12], False),
                                      "Has a dog named Rex": (None, False)}
