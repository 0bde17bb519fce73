"""Erasure that survives replays (issue 26) in-process: real PostgreSQL + pgvector, the real
SDKs against the local fakes. Tombstones: after a forget no replay path (a forced claim — what
``eros classify --force`` and a ``force=true`` message do —, ``requeue --from-start``, a retry
of an attempt begun before it, the sweeper) re-learns from the turns it covered, and every
table is scanned afterwards; a turn written later is learned as usual. Also: canonicals
derived from a forgotten memory, recall cells of every scope, the erasure log."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from eros.consolidation.services.consolidate import Consolidator, consolidate
from eros.dreaming.services.classify import Pipeline, classify, start_attempt
from eros.memory.core.claims import Attempt
from eros.memory.db import repo
from eros.ops import metrics
from eros.privacy.db import erasure_sql
from eros.privacy.services import erasure
from eros.privacy.services.forget import forget_memory, forget_user, user_request
from testkit.data import add_messages, add_session, ago, mem_line
from testkit.fakes import FakeLLMServer, Reply
from testkit.fakes.llm_server import extract_memories, last_user_text
from tests.integration.test_consolidate import add, answer, axis
from tests.support.privacy import rows_mentioning, wait_for_lock_wait


def _contents(engine: Engine, user: uuid.UUID) -> list[str]:
    with engine.connect() as conn:
        return sorted(conn.execute(text(
            "SELECT content FROM engine.companion_memories WHERE user_id = :u"),
            {"u": user}).scalars())


def _forced(pipeline: Pipeline, sid: uuid.UUID) -> Attempt | None:
    """What ``eros classify SID --force`` and a ``force=true`` message do: claim, attempt."""
    with pipeline.engine.begin() as conn:
        claim = repo.claim_one(conn, sid, stale_secs=600, force=True)
    assert claim is not None
    return start_attempt(pipeline, sid, claim.token)


def _sweep(pipeline: Pipeline) -> int:
    """The beat's claim and a worker's classify of everything claimed; memories written."""
    with pipeline.engine.begin() as conn:
        claims = repo.claim_idle(conn, idle_secs=0, stale_secs=600, batch=50)
    written = 0
    for claim in claims:
        attempt = start_attempt(pipeline, claim.session_id, claim.token)
        if attempt is not None:
            written += classify(pipeline, attempt).memories_written
    return written


def _runs_since_forget(engine: Engine, user: uuid.UUID) -> list[tuple[str, int]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(  # type: ignore[misc]
            "SELECT outcome, memory_count FROM engine.classification_runs WHERE user_id = :u"
            " AND finished_at >= (SELECT max(completed_at) FROM engine.erasure_log"
            " WHERE user_id = :u) ORDER BY id"), {"u": user})]


def _replay_everything(pipeline: Pipeline, sid: uuid.UUID,
                       before: Attempt | None = None) -> None:
    """Every replay path after a forget; none may write a memory."""
    engine = pipeline.engine
    if before is not None:  # a retry of an attempt begun before the forget
        assert start_attempt(pipeline, sid, before.claim.token) is None
    attempt = _forced(pipeline, sid)  # --force / a force=true message delivered late
    assert attempt is not None
    assert classify(pipeline, attempt).memories_written == 0
    with engine.begin() as conn:  # eros requeue --from-start
        assert repo.requeue(conn, [sid], from_start=True) == 1
    assert _sweep(pipeline) == 0


def test_no_replay_relearns_what_a_user_forget_erased(pipeline: Pipeline,
                                                       engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai"),
                                 mem_line("preference", 0.6, "Likes tea")], user_id=user)
    assert _sweep(pipeline) == 2
    before = _forced(pipeline, sid)  # an attempt in flight when the forget commits
    counts = forget_user(engine, user)
    assert counts["memories"] == 2
    _replay_everything(pipeline, sid, before)
    assert _contents(engine, user) == []
    # the session, and the replays' own runs: each read nothing and learned nothing
    assert rows_mentioning(engine, [user]) == {"chat_sessions": 1, "classification_runs": 2}
    assert _runs_since_forget(engine, user) == [("empty", 0), ("empty", 0)]
    # a turn written after the erasure is learned as usual, and only it
    with engine.begin() as conn:
        add_messages(conn, sid, [mem_line("preference", 0.5, "Likes jazz")], last=ago(hours=1))
    assert _sweep(pipeline) == 1
    attempt = _forced(pipeline, sid)  # and a replay now re-reads only the later turn
    assert attempt is not None and attempt.turns is not None
    assert [t.content for t in attempt.turns[0]] == ["MEM preference 0.5 Likes jazz"]
    assert _contents(engine, user) == ["Likes jazz"]


def _relationship(request: dict[str, Any]) -> Reply:
    """Every MEM line as a relationship-layer memory."""
    memories = [{**m, "layer": "relationship"}
                for m in extract_memories(last_user_text(request))]
    return Reply(json.dumps({"memories": memories}))


def test_no_replay_relearns_what_a_persona_forget_erased(pipeline: Pipeline, engine: Engine,
                                                          llm: FakeLLMServer) -> None:
    llm.set_responder(_relationship)
    user, persona, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        mine = add_session(conn, [mem_line("event", 0.7, "We joked about cats")],
                           user_id=user, instance_id=persona)
        kept = add_session(conn, [mem_line("event", 0.7, "We talked about work")],
                           user_id=user, instance_id=other)
    assert _sweep(pipeline) == 2
    forget_user(engine, user, instance_id=persona)
    _replay_everything(pipeline, mine)
    assert _contents(engine, user) == ["We talked about work"]
    assert rows_mentioning(engine, [persona]) == {"chat_sessions": 1}
    assert _runs_since_forget(engine, user) == [("empty", 0), ("empty", 0)]
    # the other persona's session is not tombstoned: a forced re-run reads it whole
    attempt = _forced(pipeline, kept)
    assert attempt is not None and attempt.turns is not None and len(attempt.turns[0]) == 1


def test_a_forgotten_memory_is_not_learned_again_from_its_source_turns(
        pipeline: Pipeline, engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai")], user_id=user)
        other = add_session(conn, [mem_line("preference", 0.6, "Likes tea")], user_id=user)
    assert _sweep(pipeline) == 2
    with engine.connect() as conn:
        shanghai = conn.execute(text("SELECT id FROM engine.companion_memories"
                                     " WHERE session_id = :s"), {"s": sid}).scalar_one()
    counts = forget_memory(engine, shanghai)
    assert counts["memories"] == 1 and counts["erased_turns"] == 1
    _replay_everything(pipeline, sid)
    assert _contents(engine, user) == ["Likes tea"]
    assert rows_mentioning(engine, [shanghai]) == {}
    # the other session is untouched: a forced re-run reads it (and dedups its memory)
    attempt = _forced(pipeline, other)
    assert attempt is not None and attempt.turns is not None and len(attempt.turns[0]) == 1
    # a turn written after the erasure is learned as usual
    with engine.begin() as conn:
        add_messages(conn, sid, [mem_line("fact", 0.7, "Moved to Tokyo")], last=ago(hours=1))
    assert _sweep(pipeline) == 1
    assert _contents(engine, user) == ["Likes tea", "Moved to Tokyo"]


def _hold_reply(llm: FakeLLMServer) -> tuple[threading.Event, threading.Event]:
    asked, release = threading.Event(), threading.Event()
    default = llm._responder

    def held(request: dict[str, Any]) -> Reply:
        asked.set()
        assert release.wait(30)
        return default(request)

    llm.set_responder(held)
    return asked, release


def test_a_forced_run_waiting_for_the_model_writes_nothing_after_a_memory_forget(
        pipeline: Pipeline, engine: Engine, llm: FakeLLMServer) -> None:
    """READ COMMITTED race: the re-extraction read the source turns before the forget
    committed; the model answers after it. It must not write the memory back."""
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai")], user_id=user)
    assert _sweep(pipeline) == 1
    with engine.connect() as conn:
        memory = conn.execute(text("SELECT id FROM engine.companion_memories"
                                   " WHERE session_id = :s"), {"s": sid}).scalar_one()
    attempt = _forced(pipeline, sid)
    assert attempt is not None
    asked, release = _hold_reply(llm)
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(classify(pipeline, attempt)))
    thread.start()
    assert asked.wait(20)
    counts = forget_memory(engine, memory)  # committed while the model holds its reply
    assert counts["sessions_fenced"] == 1
    release.set()
    thread.join(30)
    assert out[0].outcome == "claim_lost" and out[0].memories_written == 0
    assert _contents(engine, user) == []
    # the session is claimable again at once, and its next extraction skips the turn
    assert _sweep(pipeline) == 0 and _contents(engine, user) == []


def test_a_memory_forget_waits_for_a_classify_that_is_writing(
        pipeline: Pipeline, engine: Engine) -> None:
    """The other order: the classify is inside its write when the forget starts; the forget
    waits for it (the session row) and then tombstones the turn the memory came from."""
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai"),
                                 mem_line("fact", 0.5, "Has a cat")], user_id=user)
    assert _sweep(pipeline) == 2
    with engine.connect() as conn:
        cat = conn.execute(text("SELECT id FROM engine.companion_memories"
                                " WHERE content = 'Has a cat'")).scalar_one()
    attempt = _forced(pipeline, sid)
    assert attempt is not None
    with engine.connect() as blocker:
        # holds classify inside its finishing statement: the session's row locked by its
        # fence, its turns' message locks (FOR KEY SHARE) waiting
        blocker.execute(text("SELECT 1 FROM engine.chat_messages WHERE session_id = :s"
                             " FOR UPDATE"), {"s": sid})
        writer = threading.Thread(target=lambda: classify(pipeline, attempt))
        writer.start()
        wait_for_lock_wait(engine, "WITH fence AS")
        out: list[Any] = []
        forgetter = threading.Thread(target=lambda: out.append(forget_memory(engine, cat)))
        forgetter.start()
        wait_for_lock_wait(engine, "SELECT id FROM engine.chat_sessions")
        blocker.rollback()
    writer.join(30)
    forgetter.join(30)
    # provenance (source_seqs): only the turn the memory cites is tombstoned, not the window
    assert out[0]["memories"] == 1 and out[0]["erased_turns"] == 1
    attempt = _forced(pipeline, sid)
    assert attempt is not None and attempt.turns is not None
    assert [t.content for t in attempt.turns[0]] == ["MEM fact 0.7 Lives in Shanghai"]
    _replay_everything(pipeline, sid)
    assert _contents(engine, user) == ["Lives in Shanghai"]


def test_a_canonical_rewritten_from_a_forgotten_memory_goes_with_it(
        c: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    """Shanghai is superseded into a canonical the model wrote from it and two Tokyo
    duplicates: the canonical may carry the forgotten fact, so it goes; the duplicates are
    current again and back in the backlog, for the next pass to rewrite without it."""
    user = uuid.uuid4()
    shanghai = add(engine, user, "Lives in Shanghai", axis(0), days_ago=400)
    tokyo = [add(engine, user, "Moved to Tokyo", axis(0, 1, cos=0.9), days_ago=7),
             add(engine, user, "Relocated to Tokyo", axis(0, 1, cos=0.9), days_ago=6)]
    llm.script_replies([Reply(json.dumps({"clusters": [
        answer(1, "Moved from Shanghai to Tokyo", [2, 3], [1])]}))])
    assert consolidate(c, user).canonical_written == 1
    with engine.connect() as conn:
        canonical = conn.execute(text(
            "SELECT id FROM engine.companion_memories WHERE user_id = :u AND"
            " status = 'current'"), {"u": user}).scalar_one()
    counts = forget_memory(engine, shanghai)
    assert (counts["memories"], counts["derived"], counts["restored"]) == (2, 1, 2)
    assert rows_mentioning(engine, [shanghai, canonical]) == {}
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT m.content, m.status, m.replaced_by, b.memory_id IS NOT NULL AS backlog"
            " FROM engine.companion_memories m LEFT JOIN engine.consolidation_backlog b"
            " ON b.memory_id = m.id WHERE m.user_id = :u ORDER BY m.created_at"),
            {"u": user}).all()
    assert [tuple(r) for r in rows] == [("Moved to Tokyo", "current", None, True),
                                        ("Relocated to Tokyo", "current", None, True)]
    assert {r for r in tokyo} == set(_ids(engine, user))


def _ids(engine: Engine, user: uuid.UUID) -> list[uuid.UUID]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT id FROM engine.companion_memories"
                                      " WHERE user_id = :u"), {"u": user}).scalars())


def _cells(engine: Engine, user: uuid.UUID) -> tuple[int, int]:
    with engine.connect() as conn:
        return (int(conn.execute(text("SELECT count(*) FROM engine.memory_cells"
                                      " WHERE user_id = :u"), {"u": user}).scalar_one()),
                int(conn.execute(text("SELECT count(*) FROM engine.memory_sketches"
                                      " WHERE user_id = :u AND cell IS NOT NULL"),
                                 {"u": user}).scalar_one()))


@pytest.mark.parametrize("scope", ["persona", "memory"])
def test_cells_computed_from_forgotten_vectors_are_dropped(engine: Engine,
                                                           scope: str) -> None:
    user, persona = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO engine.memory_cells (user_id, cell, centroid)"
                          " VALUES (:u, 0, :v)"), {"u": user, "v": str(axis(0))})
        ids = [conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, instance_id, content, category,"
            " embedding) VALUES (:u, :i, :c, 'event', :e) RETURNING id"),
            {"u": user, "i": inst, "c": content, "e": str(axis(0))}).scalar_one()
            for inst, content in ((None, "Lives in Shanghai"), (persona, "Joked about cats"))]
    assert _cells(engine, user) == (1, 2)  # the insert trigger put both in cell 0
    counts = (forget_user(engine, user, instance_id=persona) if scope == "persona"
              else forget_memory(engine, ids[1]))
    assert counts["memories"] == 1 and counts["cells"] == 1
    assert _cells(engine, user) == (0, 0)  # recall scans every sketch until re-clustered


def test_every_erasure_is_logged_with_ids_and_counts_only(pipeline: Pipeline,
                                                           engine: Engine) -> None:
    user, persona = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in zqxlogsentinel")],
                          user_id=user, instance_id=persona)
    assert _sweep(pipeline) == 1
    memory = _ids(engine, user)[0]
    forget_memory(engine, memory, task_id="task-1")
    forget_user(engine, user, instance_id=persona)
    done = forget_user(engine, user, sessions=True)
    with engine.connect() as conn:
        rows = erasure_sql.list_erasures(conn, user)
        raw = conn.execute(text("SELECT string_agg(CAST(t AS text), ' ')"
                                " FROM engine.erasure_log t")).scalar_one()
    assert [(r["scope"], r["status"], r["memory_id"], r["instance_id"], r["task_id"])
            for r in rows] == [("user", "done", None, None, None),
                               ("persona", "done", None, persona, None),
                               ("memory", "done", memory, None, "task-1")]
    assert rows[0]["id"] == done["erasure_id"] and rows[0]["counts"]["sessions_deleted"] == 1
    assert rows[2]["user_id"] == user and rows[2]["counts"]["memories"] == 1
    assert all(r["completed_at"] >= r["requested_at"] for r in rows)
    assert "zqxlogsentinel" not in raw and str(sid) not in raw


def test_a_failed_erasure_is_logged_counted_and_leaves_everything(engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        add_session(conn, [("user", "hi")], user_id=user)
    failed = metrics.registry().ERASURES_FAILED.labels("user")
    before = failed._value.get()
    request = user_request(user, task_id="task-9")
    out: list[Any] = []

    def run() -> None:
        try:
            forget_user(engine, user, request=request)
        except DBAPIError as err:
            out.append(erasure.record_failed(engine, request, err))

    with engine.connect() as blocker:
        blocker.execute(text("SELECT id FROM engine.chat_sessions WHERE user_id = :u"
                             " FOR UPDATE"), {"u": user})
        thread = threading.Thread(target=run)
        thread.start()
        wait_for_lock_wait(engine, "SELECT id FROM engine.chat_sessions")
        # a non-transient failure: the statement is cancelled (57014, like a statement timeout)
        blocker.execute(text(
            "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE 'SELECT id FROM engine.chat_sessions%'"))
        blocker.rollback()
    thread.join(30)
    assert failed._value.get() == before + 1
    with engine.connect() as conn:
        rows = erasure_sql.list_erasures(conn, user, failed_only=True)
        state = conn.execute(text("SELECT outcome FROM engine.chat_sessions"
                                  " WHERE user_id = :u"), {"u": user}).scalar_one()
    assert [(r["id"], r["status"], r["error_code"], r["task_id"], r["counts"]) for r in rows] \
        == [(out[0], "failed", "57014", "task-9", {})]
    assert state is None  # rolled back: nothing was marked


def test_a_memory_written_before_provenance_tombstones_its_extraction_window(
        pipeline: Pipeline, engine: Engine) -> None:
    """source_seqs NULL (written before issue 24): the window in metadata.source_seq."""
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai"),
                                 mem_line("fact", 0.5, "Has a cat")], user_id=user)
    assert _sweep(pipeline) == 2
    with engine.begin() as conn:
        cat = conn.execute(text(
            "UPDATE engine.companion_memories SET source_seqs = NULL, source_fallback = false"
            " WHERE content = 'Has a cat' RETURNING id")).scalar_one()
    assert forget_memory(engine, cat)["erased_turns"] == 2
    _replay_everything(pipeline, sid)
    assert _contents(engine, user) == ["Lives in Shanghai"]
