"""The erasure tasks through a real worker (issue 26).

- Retries keep their arguments: every documented calling form of ``eros.forget_user`` /
  ``eros.forget_memory`` (and ``eros.forget_message``) meets a transient database error — a
  lock timeout (55P03), a dropped connection (the waiting backend terminated) or a deadlock
  (40P01, the class of a serialization failure: the transaction lost a race) — and still
  completes: one ``done`` row in ``engine.erasure_log`` per request. The failure is forced:
  this test holds the user's consolidation lock (the forget's first lock), and lets go only
  after the worker's log shows the retry.
- A non-transient failure (the statement cancelled, 57014) ends ``failed`` in the log.
- A ``classify_session`` message with ``force=true`` queued before a forget and delivered
  after it learns nothing back.
- The security review's reproduction (issue 32), through the worker: a kept member of a
  consolidation whose ``source_seqs`` span two sessions, its merged copy deleted by
  HISTORY_RETENTION_DAYS; ``eros.forget_memory`` on it, then forced re-runs of both sessions
  learn nothing back, nor index the erased turns again (tests/integration/test_erasure_matrix.py
  runs the whole matrix in-process).
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from celery import Celery
from sqlalchemy import Connection, Engine, text

from eros.memory.db.user_lock import LOCK_KEY, LOCK_NAMESPACE
from eros.privacy.db.erasure_sql import list_erasures
from eros.privacy.services.forget import forget_user
from eros.recall.db import turns_sql
from testkit.data import add_session, mem_line
from testkit.workers import WorkerProcess, wait_until
from tests.e2e.conftest import Starter
from tests.support.privacy import rows_mentioning, wait_for_lock_wait

pytestmark = pytest.mark.e2e

LOCK = "SELECT pg_advisory_xact_lock"
TIMEOUT = "LockNotAvailable"
DROPPED = "AdminShutdown"  # the backend terminated: the connection is gone
CANCELLED = "QueryCanceled"
DEADLOCK = "DeadlockDetected"


def _seed(engine: Engine) -> tuple[uuid.UUID, uuid.UUID, uuid.UUID, uuid.UUID]:
    """A user with a session in one persona and a memory there citing its one message;
    (user, persona, memory, message)."""
    user, persona = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "hello")], user_id=user, instance_id=persona)
        message, seq = conn.execute(text("SELECT id, seq FROM engine.chat_messages"
                                         " WHERE session_id = :s"), {"s": sid}).one()
        memory = conn.execute(text(
            "INSERT INTO engine.companion_memories (session_id, user_id, instance_id, content,"
            " category, source_seqs) VALUES (:s, :u, :i, 'Joked about cats', 'event', :q)"
            " RETURNING id"),
            {"s": sid, "u": user, "i": persona, "q": [seq]}).scalar_one()
    return user, persona, memory, message


def _hold(conn: Connection, user: uuid.UUID) -> None:
    conn.execute(text(f"{LOCK}({LOCK_KEY})"), {"ns": LOCK_NAMESPACE, "user_id": str(user)})


def _count(worker: WorkerProcess, error: str) -> int:
    return worker.log().count(f"database error ({error}")


def _break(engine: Engine, worker: WorkerProcess, blocker: Connection, error: str) -> None:
    """Make the forget waiting behind ``blocker`` fail once with ``error``, and see it."""
    before = _count(worker, error)
    wait_for_lock_wait(engine, LOCK, timeout=30)
    if error != TIMEOUT:  # else: the worker's DATABASE_LOCK_TIMEOUT_MS ends the wait
        fn = "pg_terminate_backend" if error == DROPPED else "pg_cancel_backend"
        blocker.execute(text(
            f"SELECT {fn}(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            f" AND query LIKE '{LOCK}%' AND pid <> pg_backend_pid()"))
    if error != CANCELLED:
        wait_until(lambda: _count(worker, error) > before, timeout=30,
                   message=f"a retry after {error}")


CASES: list[tuple[str, str, Any]] = [
    # (task, the transient error it meets, how it is called)
    ("eros.forget_user", TIMEOUT, lambda u, p, m: ([str(u)], {})),
    ("eros.forget_user", DROPPED, lambda u, p, m: ([], {"user_id": str(u)})),
    ("eros.forget_user", TIMEOUT,
     lambda u, p, m: ([], {"user_id": str(u), "instance_id": str(p), "sessions": True})),
    ("eros.forget_user", DROPPED, lambda u, p, m: ([str(u), str(p), True], {})),
    ("eros.forget_user", TIMEOUT, lambda u, p, m: ([str(u)], {"instance_id": str(p)})),
    ("eros.forget_memory", DROPPED, lambda u, p, m: ([str(m)], {})),
    ("eros.forget_memory", TIMEOUT, lambda u, p, m: ([], {"memory_id": str(m)})),
    # (issue 24) the third argument is the message: the memory citing it goes with it
    ("eros.forget_message", DROPPED, lambda u, p, m: ([], {"message_id": str(m)})),
    ("eros.forget_user", DEADLOCK,
     lambda u, p, m: ([str(u)], {"instance_id": str(p), "sessions": False})),
]


def _deadlock(engine: Engine, worker: WorkerProcess, blocker: Connection,
              user: uuid.UUID) -> None:
    """The blocker holds the user's session rows; the forget (holding the user's locks) waits
    for them; the blocker then asks for the forget's first lock: a cycle. The forget waited
    first, so its deadlock check (deadlock_timeout) finds it and it is the one aborted."""
    before = _count(worker, DEADLOCK)
    wait_for_lock_wait(engine, "SELECT id FROM engine.chat_sessions", timeout=30)
    thread = threading.Thread(target=_hold, args=(blocker, user))
    thread.start()
    wait_until(lambda: _count(worker, DEADLOCK) > before, timeout=30,
               message="a retry after a deadlock")
    thread.join(30)


def _queued_force_after_a_forget(engine: Engine, client: Celery,
                                 start_worker: Starter) -> WorkerProcess:
    """A force=true classify queued before a forget and delivered after it (the worker
    starts only once the forget has committed) learns nothing back."""
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai")], user_id=user)
        conn.execute(text(  # classified through its turn already
            "UPDATE engine.chat_sessions SET classified_at = now(),"
            " classified_through_seq = last_seq WHERE id = :s"), {"s": sid})
    client.send_task("eros.classify_session", args=[str(sid)], kwargs={"force": True},
                     queue="eros.classify")
    forget_user(engine, user)  # committed before any worker runs: the message waits
    worker = start_worker("w1", concurrency=1, DATABASE_LOCK_TIMEOUT_MS="1000")

    def ran() -> bool:  # classify keeps no result: its run row says it ran
        with engine.connect() as conn:
            return conn.execute(text("SELECT outcome FROM engine.classification_runs"
                                     " WHERE session_id = :s"), {"s": sid}).all() != []
    wait_until(ran, timeout=60, message="the queued classify ran")
    with engine.connect() as conn:
        runs = conn.execute(text("SELECT outcome, memory_count FROM"
                                 " engine.classification_runs WHERE session_id = :s"),
                            {"s": sid}).all()
    assert [tuple(r) for r in runs] == [("empty", 0)]
    with engine.connect() as conn:
        memories = conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                     " WHERE user_id = :u"), {"u": user}).scalar_one()
    assert memories == 0
    assert rows_mentioning(engine, [user]) == {"chat_sessions": 1, "classification_runs": 1}
    return worker


def test_erasure_tasks_survive_transient_errors_and_queued_replays(
        engine: Engine, start_worker: Starter, redis_url: str) -> None:
    client = Celery(broker=redis_url, backend=redis_url)
    worker = _queued_force_after_a_forget(engine, client, start_worker)
    for task, error, form in CASES:
        user, persona, memory, message = _seed(engine)
        args, kwargs = form(user, persona,
                            message if task == "eros.forget_message" else memory)
        with engine.connect() as blocker:
            if error == DEADLOCK:
                blocker.execute(text("SELECT id FROM engine.chat_sessions WHERE user_id = :u"
                                     " FOR UPDATE"), {"u": user})
            else:
                _hold(blocker, user)
            result = client.send_task(task, args=args, kwargs=kwargs, queue="eros.claim")
            if error == DEADLOCK:
                _deadlock(engine, worker, blocker, user)
            else:
                _break(engine, worker, blocker, error)
            blocker.rollback()  # let go: the retry now succeeds
        payload = result.get(timeout=60)
        assert payload["outcome"] == "forgotten", (task, error, args, kwargs, payload)
        assert payload["memories"] == 1, (task, args, kwargs, payload)
        with engine.connect() as conn:
            rows = list_erasures(conn, user)
        assert [(r["status"], r["task_id"], r["id"]) for r in rows] == [
            ("done", result.id, payload["erasure_id"])], (task, args, kwargs)

    # not transient: the statement is cancelled — recorded failed, nothing removed
    user, _, _, _ = _seed(engine)
    with engine.connect() as blocker:
        _hold(blocker, user)
        result = client.send_task("eros.forget_user", kwargs={"user_id": str(user)},
                                  queue="eros.claim")
        _break(engine, worker, blocker, CANCELLED)
        payload = result.get(timeout=60)
        blocker.rollback()
    assert payload["outcome"] == "error" and "57014" in payload["error"]
    with engine.connect() as conn:
        rows = list_erasures(conn, user)
        left = conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                 " WHERE user_id = :u"), {"u": user}).scalar_one()
    assert [(r["status"], r["error_code"], r["task_id"], r["id"]) for r in rows] == [
        ("failed", "57014", result.id, payload["erasure_id"])]
    assert left == 1
    _survivor_forgotten_after_retention(engine, client)


def _survivor_forgotten_after_retention(engine: Engine, client: Celery) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sids = [add_session(conn, [mem_line("preference", 0.6, "Likes jazz")], user_id=user)
                for _ in range(2)]
        conn.execute(text("UPDATE engine.chat_sessions SET classified_at = now(),"
                          " classified_through_seq = last_seq WHERE user_id = :u"), {"u": user})
        seqs = sorted(conn.execute(text(
            "SELECT seq FROM engine.chat_messages WHERE session_id = ANY(:s)"),
            {"s": sids}).scalars())
        survivor = conn.execute(text(  # the merged copy of sids[1] is gone (retention)
            "INSERT INTO engine.companion_memories (session_id, user_id, content, category,"
            " source_seqs) VALUES (:s, :u, 'Likes jazz', 'preference', :q) RETURNING id"),
            {"s": sids[0], "u": user, "q": seqs}).scalar_one()
        # the turns recall layer (issue 31 item 4): both turns indexed, as classify indexed them
        turns = conn.execute(text("SELECT seq, session_id, sent_at FROM engine.chat_messages"
                                  " WHERE seq = ANY(:q)"), {"q": seqs}).all()
        turns_sql.write_turns(conn, [turns_sql.TurnRow(
            t.seq, t.session_id, user, None, t.sent_at, [1.0] + [0.0] * 511, "m")
            for t in turns])
    payload = client.send_task("eros.forget_memory", args=[str(survivor)],
                               queue="eros.claim").get(timeout=60)
    assert (payload["outcome"], payload["erased_turns"]) == ("forgotten", 2), payload
    assert payload["indexed_turns"] == 2, payload
    for sid in sids:
        client.send_task("eros.classify_session", args=[str(sid)], kwargs={"force": True},
                         queue="eros.classify")

    def ran() -> bool:
        with engine.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM engine.classification_runs"
                                     " WHERE user_id = :u"), {"u": user}).scalar_one() == 2
    wait_until(ran, timeout=60, message="both forced re-runs ran")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                 " WHERE user_id = :u"), {"u": user}).scalar_one() == 0
        # nor did the re-runs index the erased turns again
        assert conn.execute(text("SELECT count(*) FROM engine.memory_turns"
                                 " WHERE user_id = :u"), {"u": user}).scalar_one() == 0
