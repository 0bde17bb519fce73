"""Strict task arguments through the real broker and a real worker (issue 32).

A JSON client sends every task the worker registered (the test asks the real worker which
those are, so a new task without malformed variants here fails it) with strings, numbers and
nulls where booleans, ids, counts and labels belong. Each message is refused — recorded in the
dead letter (``engine.rejected_tasks``, by message id), counted in
``eros_tasks_rejected_total{task}`` as the worker serves it, answered with an error naming the
argument (for the tasks that keep results) — and the database is byte-for-byte what it was:
nothing deleted, claimed, classified, consolidated, clustered, allowed or relabelled. The
review's reproductions come first: ``eros.forget_user(user, sessions="false")`` deleted
every session and message of the user, and ``eros.recall`` with ``include_sensitive="false"``
returned the memory it was asked to leave out. The well-formed recalls that follow keep their
results seconds, and the user's forget purges them.
"""

from __future__ import annotations

import socket
import urllib.request
import uuid
from collections import Counter
from typing import Any

import pytest
import redis
from celery import Celery
from celery.result import AsyncResult
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, text

from testkit.data import add_session
from testkit.redis_process import free_port
from testkit.workers import wait_until
from tests.e2e.conftest import Starter

pytestmark = pytest.mark.e2e

#: tasks whose results are kept (the caller waits on them)
KEEPS_RESULT = {"eros.recall", "eros.forget_user", "eros.forget_memory", "eros.forget_message",
                "eros.forget_session", "eros.allow_sensitive", "eros.relabel_sensitivity"}


def _seed(engine: Engine) -> dict[str, str]:
    """A user with an idle, unclassified session in a persona (a valid classify or claim would
    change it), a profile memory, a health-labelled one and a superseded one."""
    user, persona = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "MEM fact 0.7 Lives in Lyon")], user_id=user,
                          instance_id=persona)
        message = conn.execute(text("SELECT id FROM engine.chat_messages WHERE session_id = :s"),
                               {"s": sid}).scalar_one()
        ids = [conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, instance_id, content, category,"
            " importance, sensitivity, status, embedding) VALUES (:u, :i, :c, 'fact', 0.8,"
            " :sens, :st, CAST(:v AS vector)) RETURNING id"),
            {"u": user, "i": None, "c": content, "sens": sens, "st": status,
             "v": "[" + ",".join(["0.04"] * 511 + ["1"]) + "]"}).scalar_one()
            for content, sens, status in (("Likes jazz", None, "current"),
                                          ("Has depression", "health", "current"),
                                          ("Lived in Paris", None, "superseded"))]
    return {"user": str(user), "persona": str(persona), "session": str(sid),
            "message": str(message), "memory": str(ids[0])}


def _fingerprint(engine: Engine) -> dict[str, str]:
    """Every engine table's rows, hashed (the dead letter itself aside)."""
    with engine.connect() as conn:
        tables = conn.execute(text(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'engine'"
            " AND tablename <> 'rejected_tasks' ORDER BY 1")).scalars().all()
        return {t: conn.execute(text(
            f"SELECT count(*) || ':' || coalesce(md5(string_agg(r::text, '|' ORDER BY r::text)),"
            f" '') FROM engine.{t} r")).scalar_one() for t in tables}


def _messages(s: dict[str, str]) -> list[tuple[str, list[Any], dict[str, Any], str]]:
    """(task, args, kwargs, the argument the error must name): string, number and null
    variants of every boolean, id and count, plus unknown keys."""
    u, p, sid, mem, msg = s["user"], s["persona"], s["session"], s["memory"], s["message"]
    out: list[tuple[str, list[Any], dict[str, Any], str]] = []
    for v in ("false", "0", 0, None, "true", 1):
        out.append(("eros.forget_user", [u], {"sessions": v}, "sessions"))
    out.append(("eros.forget_user", [u, p, "false"], {}, "sessions"))
    for v in ("false", "0", 0, "true", 1, "Health"):
        out.append(("eros.forget_user", [u], {"sensitive": v}, "sensitive"))
    for v in (0, None, "not-a-uuid"):
        out.append(("eros.forget_user", [v], {}, "user_id"))
        out.append(("eros.forget_memory", [v], {}, "memory_id"))
        out.append(("eros.forget_message", [v], {}, "message_id"))
        out.append(("eros.forget_session", [v], {}, "session_id"))
        out.append(("eros.consolidate_user", [v], {}, "user_id"))
        out.append(("eros.classify_session", [v], {}, "session_id"))
        out.append(("eros.recall", [v, "music"], {}, "user_id"))
    out.append(("eros.forget_user", [u], {"instance_id": 7}, "instance_id"))
    out.append(("eros.forget_user", [u], {"everything": True}, "everything"))
    out.append(("eros.forget_memory", [mem], {"force": True}, "force"))
    out.append(("eros.forget_message", [msg], {"cascade": "false"}, "cascade"))
    out.append(("eros.forget_session", [sid], {"messages": "false"}, "messages"))
    for v in ("false", "0", 0):
        out.append(("eros.recall", [u, "music"], {"include_sensitive": v}, "include_sensitive"))
    for v in ("false", "0", 0, None):
        out.append(("eros.recall", [u, "music"], {"include_replaced": v}, "include_replaced"))
    for v in ("5", 5.0, True):
        out.append(("eros.recall", [u, "music"], {"k": v}, "k"))
        out.append(("eros.claim_idle_sessions", [v], {}, "batch"))
        out.append(("eros.find_consolidation_candidates", [], {"batch": v}, "batch"))
    out.append(("eros.recall", [u, None], {}, "query"))
    out.append(("eros.recall", [u, "music"], {"instance_id": 0}, "instance_id"))
    for v in ("false", "0", 0, None, "true"):
        out.append(("eros.classify_session", [sid], {"force": v}, "force"))
    out.append(("eros.classify_session", [sid], {"claim_token": 12}, "claim_token"))
    out.append(("eros.cluster_memories", [0], {}, "user_id"))
    out.append(("eros.cluster_memories", ["not-a-uuid"], {}, "user_id"))
    out.append(("eros.apply_retention", [], {"dry_run": "false"}, "dry_run"))
    out.append(("eros.reembed_memories", [], {"model": 3}, "model"))
    # consent (issue 32): a label is a label or "all" — never a boolean's spelling
    for v in (0, None, "not-a-uuid"):
        out.append(("eros.allow_sensitive", [v, "health"], {}, "user_id"))
    for v in ("true", True, "false", False, "0", 0, None, "Health", "none", ["health"]):
        out.append(("eros.allow_sensitive", [u], {"label": v}, "label"))
    out.append(("eros.allow_sensitive", [u], {}, "label"))  # missing
    out.append(("eros.allow_sensitive", [u, "health"], {"instance_id": p}, "instance_id"))
    for v in ("5", 5.0, True, None, 0):
        out.append(("eros.relabel_sensitivity", [v], {}, "batch"))
    for v in ("1", 1.0, True, 0, "false"):
        out.append(("eros.relabel_sensitivity", [], {"max_batches": v}, "max_batches"))
    out.append(("eros.relabel_sensitivity", [], {"dry_run": "false"}, "dry_run"))
    for v in (True, None, 0, "llm", "Model"):
        out.append(("eros.relabel_sensitivity", [], {"labeller": v}, "labeller"))
    out.append(("eros.screen_unscreened", [], {"limit": 5}, "limit"))
    out.append(("eros.screen_unscreened", ["false"], {}, "positional"))
    return out


def _rejected(engine: Engine) -> dict[str, tuple[str, str]]:
    with engine.connect() as conn:
        return {r.task_id: (r.task_name, r.error) for r in conn.execute(text(
            "SELECT task_id, task_name, error FROM engine.rejected_tasks"))}


def _rejected_counts(port: int) -> dict[str, float]:
    """``eros_tasks_rejected_total`` by task, as the worker serves it."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        body = resp.read().decode()
    return {s.labels["task"]: s.value for fam in text_string_to_metric_families(body)
            for s in fam.samples if s.name == "eros_tasks_rejected_total"}


def test_malformed_messages_are_refused_dead_lettered_and_change_nothing(
        engine: Engine, start_worker: Starter, redis_url: str) -> None:
    seeded = _seed(engine)
    before = _fingerprint(engine)
    port = free_port()
    worker = start_worker("w1", concurrency=2, EROS_METRICS_PORT=str(port))
    client = Celery(broker=redis_url, backend=redis_url)
    # "a test sends each task": every task the real worker registered is among the messages
    # (its one reply ends the wait: without a limit, inspect waits out its whole timeout)
    registered = client.control.inspect(destination=[f"w1@{socket.gethostname()}"], limit=1,
                                        timeout=10).registered() or {}
    eros_tasks = {t.split(" ")[0] for names in registered.values() for t in names
                  if t.startswith("eros.")}
    assert len(eros_tasks) >= 15, registered
    assert eros_tasks == {task for task, _, _, _ in _messages(seeded)}

    def send(task: str, args: list[Any], kwargs: dict[str, Any]) -> AsyncResult:
        queue = {"eros.recall": "eros.recall", "eros.relabel_sensitivity": "eros.consolidate",
                 "eros.screen_unscreened": "eros.consolidate"}.get(task, "eros.claim")
        return client.send_task(task, args=args, kwargs=kwargs, queue=queue)

    # the review's reproductions, one at a time
    for args, kwargs, argument in (
            ([seeded["user"]], {"sessions": "false"}, "sessions"),
            ([seeded["user"], "music"], {"include_sensitive": "false"}, "include_sensitive"),
            ([seeded["user"], "music"], {"include_replaced": "false"}, "include_replaced")):
        task = "eros.recall" if len(args) == 2 else "eros.forget_user"
        payload = send(task, args, kwargs).get(timeout=60)
        assert payload["outcome"] == "invalid_argument", (task, kwargs, payload)
        assert argument in payload["error"] and "memories" not in payload, payload
        assert _fingerprint(engine) == before, (task, kwargs)

    sent = [(send(task, args, kwargs), task, argument)
            for task, args, kwargs, argument in _messages(seeded)]
    ids = {r.id for r, _, _ in sent}
    wait_until(lambda: ids <= set(_rejected(engine)), timeout=120,
               message="every malformed message dead-lettered")
    rejected = _rejected(engine)
    for result, task, argument in sent:
        name, error = rejected[result.id]
        assert name == task and argument in error, (task, argument, error)
        if task in KEEPS_RESULT:
            payload = result.get(timeout=30)
            assert payload == {"outcome": "invalid_argument", "error": error}
    assert _fingerprint(engine) == before
    # one dead-letter row and one count per refused message, by task (the three
    # reproductions above included)
    assert len(rejected) == len(sent) + 3
    wanted = Counter(name for name, _ in rejected.values())
    wait_until(lambda: _rejected_counts(port) == dict(wanted), timeout=30,
               message="eros_tasks_rejected_total by task")
    for text_ in ("Lives in Lyon", "Has depression", "music"):
        assert text_ not in worker.log()  # no user text in the refusals' log lines

    # the same tasks, well formed, still work: the sensitive memory is left out on request
    recalls: list[str] = []

    def recall(**kwargs: Any) -> set[str]:
        result = send("eros.recall", [seeded["user"], "music"], kwargs)
        payload = result.get(timeout=60)
        recalls.append(result.id)
        return {m["content"] for m in payload["memories"]}
    assert recall(include_sensitive=False) == {"Likes jazz"}
    assert recall(include_sensitive=True) == {"Likes jazz", "Has depression"}
    # the model labeller through the worker: the fake server's reply carries no labels, so
    # both unlabelled rows stay unlabelled and are counted, never read as "no category"
    relabel = send("eros.relabel_sensitivity", [], {"labeller": "model"}).get(timeout=60)
    assert relabel["outcome"] == "relabelled" and relabel["labeller"] == "model", relabel
    assert (relabel["scanned"], relabel["labelled"], relabel["unreadable"],
            relabel["calls"]) == (2, 0, 2, 1), relabel
    # a recall result (memories, prompt) lives seconds (EROS_RECALL_RESULT_EXPIRES_SECS=30) …
    r = redis.Redis.from_url(redis_url)
    keys = [f"celery-task-meta-{i}" for i in recalls]
    assert all(0 < r.ttl(k) <= 30 for k in keys), [r.ttl(k) for k in keys]
    payload = send("eros.forget_user", [seeded["user"]], {"sessions": False}).get(timeout=60)
    assert payload["outcome"] == "forgotten" and payload["memories"] == 3
    # … and a forget purges the user's stored results at once (issue 32)
    assert [r.exists(k) for k in keys] == [0, 0]
    with engine.connect() as conn:
        sessions = conn.execute(text("SELECT count(*) FROM engine.chat_sessions WHERE"
                                     " user_id = :u"), {"u": seeded["user"]}).scalar_one()
    assert sessions == 1  # sessions=false keeps the session rows
