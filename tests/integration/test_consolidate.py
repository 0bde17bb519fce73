"""Consolidation end to end in-process: real PostgreSQL + pgvector, the real openai/voyageai
SDKs against local fake APIs, vectors constructed by hand so "near" is exactly what the test
says. What must hold: duplicates merge, newer facts supersede older ones, nothing else is
touched, a failure anywhere before the commit changes nothing, and concurrent or repeated
passes end in the state of one pass."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, event, text

from eros.consolidation.core.consolidation import near_dup_share
from eros.consolidation.db import consolidation_sql as sql
from eros.consolidation.db import consolidation_state_sql as state_sql
from eros.consolidation.db import consolidation_write_sql as write_sql
from eros.consolidation.db import lineage_sql
from eros.consolidation.services.consolidate import Consolidator, consolidate, start_pass
from eros.consolidation.services.consolidation_finder import find_and_claim
from eros.errors import TransientError
from eros.providers.offline.heuristic import offline_consolidation_reply
from eros.recall import recall_by_vector
from testkit.fakes import FakeLLMServer, FakeVoyageServer, Fault, Reply
from testkit.fakes.llm_server import last_user_text

DIM = 512
NOW = datetime.now(UTC)


def axis(i: int, j: int | None = None, cos: float = 1.0) -> list[float]:
    """A unit vector along axis ``i``, tilted towards axis ``j`` so that its cosine with
    ``axis(i)`` is exactly ``cos``."""
    vec = [0.0] * DIM
    vec[i] = cos
    if j is not None:
        vec[j] = (1 - cos * cos) ** 0.5
    return vec


def add(engine: Engine, user: uuid.UUID, content: str, vector: list[float], *,
        days_ago: float, category: str = "fact") -> uuid.UUID:
    with engine.begin() as conn:
        return conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, importance,"
            " embedding, created_at) VALUES (:u, :c, :k, 0.6, :e, :t) RETURNING id"),
            {"u": user, "c": content, "k": category, "e": str(vector),
             "t": NOW - timedelta(days=days_ago)}).scalar_one()


def rows(engine: Engine) -> list[tuple[Any, ...]]:
    """Everything a pass may change, in a comparable form."""
    with engine.connect() as conn:
        memories = conn.execute(text(
            "SELECT id, user_id, content, category, importance, status, replaced_by,"
            " consolidation_seen_at IS NOT NULL FROM engine.companion_memories ORDER BY id")).all()
        history = conn.execute(text("SELECT count(*) FROM engine.memory_history")).scalar()
    return [*map(tuple, memories), ("history", history)]


def current(engine: Engine, user: uuid.UUID) -> list[str]:
    with engine.connect() as conn:
        return sorted(conn.execute(text(
            "SELECT content FROM engine.companion_memories WHERE user_id = :u AND"
            " status = 'current'"), {"u": user}).scalars())


def state(engine: Engine, user: uuid.UUID) -> dict[str, Any]:
    with engine.connect() as conn:
        found = state_sql.state(conn, user)
    assert found is not None
    return found


def answer(number: int, content: str, dup: list[int], sup: list[int] = (),
           category: str = "fact") -> dict[str, Any]:
    return {"cluster": number, "canonical": {"content": content, "category": category,
                                             "importance": 0.8},
            "duplicates": dup, "superseded": list(sup), "separate": []}


def test_five_copies_become_one_with_four_merged_and_no_model_call(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer,
        voyage: FakeVoyageServer) -> None:
    user = uuid.uuid4()
    copies = [add(engine, user, text_, axis(0), days_ago=10 - i) for i, text_ in enumerate(
        ["Lives in Shanghai", "lives in shanghai.", "Lives in Shanghai", "LIVES IN SHANGHAI",
         "Lives in  Shanghai"])]
    add(engine, user, "Has a cat", axis(1), days_ago=3)
    report = consolidate(consolidator, user)
    assert report.outcome == "consolidated" and report.merged == 4
    assert (llm.request_count, voyage.request_count) == (0, 0)
    assert current(engine, user) == ["Has a cat", "Lives in  Shanghai"]
    with engine.connect() as conn:
        merged = conn.execute(text("SELECT id, replaced_by, replaced_at FROM"
                                   " engine.companion_memories WHERE status = 'merged'")).all()
        history = conn.execute(text("SELECT action, result_id, source_ids, details"
                                    " FROM engine.memory_history")).one()
    assert {r.id for r in merged} == set(copies[:4])
    assert {r.replaced_by for r in merged} == {copies[4]} and all(r.replaced_at for r in merged)
    assert history.action == "merge" and history.result_id == copies[4]
    assert set(history.source_ids) == set(copies[:4]) and history.details["kind"] == "exact"
    st = state(engine, user)
    assert (st["merged_total"], st["attempts"], st["last_outcome"]) == (4, 0, "consolidated")
    assert st["near_dup_share_before"] == pytest.approx(5 / 6, abs=1e-4)
    assert st["near_dup_share_after"] == 0


def _recalled(consolidator: Consolidator, user: uuid.UUID, vector: list[float]) -> list[str]:
    """What recall (issue 5) puts in the prompt for this query vector."""
    result = recall_by_vector(consolidator.engine, user, vector, strategy="grouped",
                              settings=consolidator.settings)
    return [m.content for m in result.memories]


def test_tokyo_supersedes_shanghai_and_nothing_else_is_touched(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    user, other = uuid.uuid4(), uuid.uuid4()
    shanghai = add(engine, user, "Lives in Shanghai", axis(0), days_ago=400)
    tokyo = add(engine, user, "Moved to Tokyo", axis(0, 1, cos=0.9), days_ago=7)
    # the same vector in another category and for another user: never in the cluster
    add(engine, user, "Went to Shanghai for a concert", axis(0), days_ago=30, category="event")
    add(engine, other, "Lives in Shanghai", axis(0), days_ago=1)
    add(engine, other, "Lives in Shanghai", axis(0), days_ago=2)
    untouched = [r for r in rows(engine) if r[0] != shanghai and r[0] != tokyo][:-1]
    llm.script_replies([Reply(json.dumps({"clusters": [
        answer(1, "Moved to Tokyo", [2], [1])]}))])
    report = consolidate(consolidator, user)
    assert (report.outcome, report.superseded, report.llm_calls) == ("consolidated", 1, 1)
    prompt = last_user_text(llm.requests[0].body)
    assert "[1] " in prompt and "[2] " in prompt and str(shanghai) not in prompt
    assert (NOW - timedelta(days=400)).strftime("%Y-%m-%d") in prompt
    assert "concert" not in prompt  # one call, one cluster: the fact cluster only
    assert current(engine, user) == ["Moved to Tokyo", "Went to Shanghai for a concert"]
    recalled = _recalled(consolidator, user, axis(0))
    assert "Moved to Tokyo" in recalled and "Lives in Shanghai" not in recalled
    after = {r[0]: r for r in rows(engine)}
    assert all(after[r[0]][:7] == r[:7] for r in untouched)  # other user, other category
    with engine.connect() as conn:
        lineage = lineage_sql.lineage(conn, user, [shanghai, tokyo])
    assert lineage[tokyo].replaced[0]["content"] == "Lives in Shanghai"
    assert lineage[tokyo].replaced[0]["action"] == "supersede"
    assert lineage[shanghai].replaced_by == {**lineage[shanghai].replaced_by, "id": tokyo,
                                             "status": "superseded"}


def test_paraphrases_get_one_new_row_from_one_model_and_one_embedding_call(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer,
        voyage: FakeVoyageServer) -> None:
    user = uuid.uuid4()
    jazz = [add(engine, user, "Likes jazz", axis(2), days_ago=20, category="preference"),
            add(engine, user, "Really enjoys jazz music", axis(2, 3, 0.95), days_ago=5,
                category="preference")]
    cat = [add(engine, user, "Has a cat", axis(4), days_ago=9),
           add(engine, user, "Owns a cat named Mochi", axis(4, 5, 0.9), days_ago=2)]
    llm.script_replies([Reply(json.dumps({"clusters": [
        answer(1, "Has a cat named Mochi", [1, 2]),
        answer(2, "Loves jazz", [3, 4], category="preference")]}))])
    report = consolidate(consolidator, user)
    assert (report.merged, report.canonical_written) == (4, 2)
    assert (llm.request_count, voyage.request_count) == (1, 1)
    body = voyage.requests[0].body
    assert body["input_type"] == "document" and sorted(body["input"]) == [
        "Has a cat named Mochi", "Loves jazz"]
    with engine.connect() as conn:
        new = conn.execute(text(
            "SELECT content, created_at, metadata, embedding IS NOT NULL AS embedded FROM"
            " engine.companion_memories WHERE status = 'current' ORDER BY content")).all()
    assert [r.content for r in new] == ["Has a cat named Mochi", "Loves jazz"]
    assert all(r.embedded for r in new)
    assert new[0].created_at == NOW - timedelta(days=2)  # dated like its newest source
    assert set(new[0].metadata["consolidated_from"]) == {str(i) for i in cat}
    assert set(new[1].metadata["consolidated_from"]) == {str(i) for i in jazz}


def test_a_kept_member_is_rewritten_once_in_a_write_of_few_statements(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    """Issue 34 item 3: a 2 KB memory row's update is never HOT, so every rewrite inserts it
    into every index again, HNSW included. A kept member whose provenance, importance and
    "judged" stamp all change is rewritten by one statement, not three, and the chunk's
    write transaction is a dozen statements."""
    user = uuid.uuid4()
    likes = add(engine, user, "Likes jazz", axis(2), days_ago=20, category="preference")
    loves = add(engine, user, "Loves jazz", axis(2, 3, 0.95), days_ago=5, category="preference")
    add(engine, user, "Lives in Shanghai", axis(0), days_ago=9)
    add(engine, user, "lives in shanghai", axis(0), days_ago=8)  # an exact pair as well
    with engine.begin() as conn:
        conn.execute(text("UPDATE engine.companion_memories SET source_seqs = CASE id"
                          " WHEN :a THEN ARRAY[7, 9]::bigint[] ELSE ARRAY[3]::bigint[] END"
                          " WHERE id IN (:a, :b)"), {"a": likes, "b": loves})
    llm.script_replies([Reply(json.dumps({"clusters": [
        answer(1, "Loves jazz", [1, 2], category="preference")]}))])
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        report = consolidate(consolidator, user)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert report.outcome == "consolidated" and report.merged == 2
    assert report.canonical_written == 0  # the canonical text is a member's: it is kept
    start = next(n for n, st in enumerate(statements) if "pg_try_advisory_xact_lock" in st)
    end = next(n for n, st in enumerate(statements)
               if st.startswith("INSERT INTO engine.consolidation_state"))
    write = statements[start:end + 1]
    rewrites = [st for st in write if st.startswith("UPDATE engine.companion_memories")]
    # the members replaced, the kept rows: never one statement per column
    assert len(rewrites) == 2, rewrites
    assert len(write) <= 10, write  # 15 before: a statement per column and per stamp
    with engine.connect() as conn:
        kept = conn.execute(text(
            "SELECT status, importance, source_seqs, consolidation_seen_at IS NOT NULL AS seen"
            " FROM engine.companion_memories WHERE id = :b"), {"b": loves}).one()
        gone = conn.execute(text("SELECT status, replaced_by FROM engine.companion_memories"
                                 " WHERE id = :a"), {"a": likes}).one()
    assert (kept.status, kept.importance, kept.source_seqs, kept.seen) == (
        "current", 0.8, [3, 7, 9], True)
    assert (gone.status, gone.replaced_by) == ("merged", loves)


def _two_clusters(engine: Engine, llm: FakeLLMServer) -> uuid.UUID:
    user = uuid.uuid4()
    add(engine, user, "Lives in Shanghai", axis(0), days_ago=9)
    add(engine, user, "lives in shanghai", axis(0), days_ago=8)  # an exact pair as well
    add(engine, user, "Likes jazz", axis(2), days_ago=20, category="preference")
    add(engine, user, "Enjoys jazz music", axis(2, 3, 0.95), days_ago=5, category="preference")
    llm.script_replies([Reply(json.dumps({"clusters": [
        answer(1, "Loves jazz", [1, 2], category="preference")]}))])
    return user


def test_embedding_failure_mid_pass_changes_nothing(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer,
        voyage: FakeVoyageServer) -> None:
    user = _two_clusters(engine, llm)
    before = rows(engine)
    voyage.script([Fault.status(500)])
    with pytest.raises(TransientError):
        consolidate(consolidator, user)
    assert rows(engine) == before


def test_failure_inside_the_write_transaction_rolls_everything_back(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    user = _two_clusters(engine, llm)
    before = rows(engine)

    def crash(*_: Any, **__: Any) -> None:
        raise RuntimeError("worker died mid-write")

    monkeypatch.setattr(write_sql, "insert_history", crash)
    with pytest.raises(RuntimeError):
        consolidate(consolidator, user)
    assert rows(engine) == before


def test_unparseable_reply_changes_nothing_and_is_recorded(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    user = _two_clusters(engine, llm)
    llm.reset()
    llm.script_replies([Reply("Sure! I merged the jazz ones {oops")])
    before = rows(engine)
    assert start_pass(consolidator, user) == 1
    report = consolidate(consolidator, user)
    assert report.outcome == "unparseable"
    assert rows(engine) == before
    st = state(engine, user)
    assert st["last_outcome"] == "unparseable" and "JSON" in st["last_error"]
    assert st["attempts"] == 1 and st["claimed_at"] is None  # counted, released


def test_redelivered_pass_finds_nothing_left_to_do(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer,
        voyage: FakeVoyageServer) -> None:
    user = uuid.uuid4()
    add(engine, user, "Has a cat", axis(4), days_ago=9)
    add(engine, user, "Has a dog", axis(4, 5, 0.9), days_ago=2)  # alike, but not the same
    add(engine, user, "Likes jazz", axis(2), days_ago=20, category="preference")
    add(engine, user, "Enjoys jazz music", axis(2, 3, 0.95), days_ago=5, category="preference")
    llm.script_replies([Reply(json.dumps({"clusters": [
        {"cluster": 1, "separate": [1, 2]},
        answer(2, "Loves jazz", [3, 4], category="preference")]}))])
    first = consolidate(consolidator, user)
    assert (first.merged, first.canonical_written, first.clusters_sent) == (2, 1, 2)
    with engine.connect() as conn:  # the after-share, computed incrementally, is exact
        full = near_dup_share(sql.read_snapshot(conn, user),
                              sql.near_pairs(conn, user, similarity=0.85)).value
    assert full == pytest.approx(2 / 3) and first.share_after == pytest.approx(full, abs=1e-4)
    after_first = rows(engine)
    again = consolidate(consolidator, user)  # a redelivered task: same user, same everything
    assert again.outcome == "nothing_to_do" and again.merged == 0
    # everything was compared (issue 17): the pass reads nothing and asks nothing; the
    # cat/dog cluster judged "separate" is not paid for again
    assert again.compared == 0 and again.clusters_sent == 0
    assert (llm.request_count, voyage.request_count) == (1, 1)  # no second model call
    assert rows(engine) == after_first
    add(engine, user, "Likes tea", axis(7), days_ago=1)  # new, but alike nothing
    third = consolidate(consolidator, user)
    assert (third.compared, third.memories, third.clusters_sent) == (1, 1, 0)
    assert (llm.request_count, voyage.request_count) == (1, 1)


def test_dry_run_shows_the_plan_and_writes_nothing(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer,
        voyage: FakeVoyageServer) -> None:
    user = _two_clusters(engine, llm)
    before = rows(engine)
    report = consolidate(consolidator, user, dry_run=True)
    assert report.outcome == "dry_run" and (report.merged, report.canonical_written) == (3, 1)
    assert {ch["result"] for ch in report.changes} == {"Loves jazz", "lives in shanghai"}
    assert [v["cluster"] for v in report.cluster_view] == [1]
    assert rows(engine) == before and voyage.request_count == 0
    with engine.connect() as conn:
        assert state_sql.state(conn, user) is None


def test_memories_arriving_during_a_pass_are_left_for_the_next(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    user = uuid.uuid4()
    add(engine, user, "Likes jazz", axis(2), days_ago=20, category="preference")
    add(engine, user, "Enjoys jazz music", axis(2, 3, 0.95), days_ago=5, category="preference")
    arrived: list[uuid.UUID] = []

    def classify_meanwhile(request: dict[str, Any]) -> Reply:
        arrived.append(add(engine, user, "Enjoys jazz music", axis(2, 3, 0.95), days_ago=0,
                           category="preference"))
        return Reply(offline_consolidation_reply(last_user_text(request)))

    llm.set_responder(classify_meanwhile)
    assert consolidate(consolidator, user).merged == 1
    with engine.connect() as conn:
        row = conn.execute(text("SELECT status, consolidation_seen_at FROM"
                                " engine.companion_memories WHERE id = :i"),
                           {"i": arrived[0]}).one()
    assert row.status == "current" and row.consolidation_seen_at is None
    assert consolidate(consolidator, user).merged == 1  # the next pass folds it in (an exact copy)
    assert current(engine, user) == ["Enjoys jazz music"]


def test_two_concurrent_passes_end_like_one(consolidator: Consolidator, engine: Engine,
                                            llm: FakeLLMServer, db_url: str) -> None:
    user = _two_clusters(engine, llm)
    llm.reset()
    # both passes read before either writes: the model answers slowly
    llm.set_responder(lambda req: Reply(json.dumps({"clusters": [
        answer(1, "Loves jazz", [1, 2], category="preference")]}), delay=0.5))
    reports = []
    threads = [threading.Thread(target=lambda: reports.append(consolidate(consolidator, user)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert llm.request_count == 2 and len(reports) == 2
    assert sorted(r.merged for r in reports) == [0, 3]
    assert current(engine, user) == ["Loves jazz", "lives in shanghai"]
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.memory_history")).scalar() == 2
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories")).scalar() == 5
    assert state(engine, user)["merged_total"] == 3


def test_finder_claims_due_users_once_and_skips_the_rest(consolidator: Consolidator,
                                                          engine: Engine) -> None:
    due, calm, parked = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    for i in range(3):
        add(engine, due, "Lives in Shanghai", axis(0), days_ago=i)
        add(engine, parked, "Lives in Shanghai", axis(0), days_ago=i)
    for i in range(5):
        add(engine, calm, f"distinct fact {i}", axis(10 + i), days_ago=i)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO engine.consolidation_state (user_id, attempts)"
                          " VALUES (:u, 5)"), {"u": parked})
    first = find_and_claim(engine, consolidator.settings)
    assert first.claimed == [due] and (first.measured, first.below_threshold) == (2, 1)
    second = find_and_claim(engine, consolidator.settings)  # due is claimed, calm was measured
    assert second.claimed == [] and second.measured == 0
    assert consolidate(consolidator, due).merged == 2
    assert find_and_claim(engine, consolidator.settings).measured == 0  # everything seen
    add(engine, calm, "distinct fact 9", axis(30), days_ago=-1)  # newer: measured again
    third = find_and_claim(engine, consolidator.settings)
    assert (third.measured, third.below_threshold, third.claimed) == (1, 1, [])


def test_clusters_over_the_call_budget_bring_the_finder_back(
        consolidator: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    small = Consolidator(consolidator.settings.model_copy(update={"consolidation_max_clusters": 1}),
                         consolidator.engine, consolidator.llm, consolidator.embedder,
                         consolidator.prompt)
    user = uuid.uuid4()
    add(engine, user, "Has a cat", axis(4), days_ago=9)
    add(engine, user, "Has a cat named Mochi", axis(4, 5, 0.9), days_ago=2)
    add(engine, user, "Likes jazz", axis(2), days_ago=20, category="preference")
    add(engine, user, "Likes jazz music", axis(2, 3, 0.95), days_ago=5, category="preference")
    llm.set_responder(lambda req: Reply(offline_consolidation_reply(last_user_text(req))))
    first = consolidate(small, user)
    assert (first.clusters_sent, first.clusters_deferred, first.merged) == (1, 1, 1)
    assert find_and_claim(engine, small.settings).claimed == [user]  # comes back for the rest
    second = consolidate(small, user)
    assert (second.clusters_sent, second.merged) == (1, 1)
    assert current(engine, user) == ["Has a cat named Mochi", "Likes jazz music"]
    assert find_and_claim(engine, small.settings).measured == 0
