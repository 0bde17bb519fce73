"""``eros forget`` purges the user's stored recall results at once (issue 32), in every scope,
as the forget tasks do: a real worker answers ``eros.recall`` through the real broker and
stores the result (memories, rendered prompt) in the real Redis result backend; right after
the CLI's forget — user, persona, memory, message, session, sensitive — that result is gone,
and another user's is still there. Each scope is recorded in ``erasure_log`` and listed by
``eros erasures``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery
from sqlalchemy import Engine, text

from eros.core.erasure import SCOPES
from testkit.data import add_session
from tests.cli.conftest import run_cli
from tests.e2e.conftest import Starter

pytestmark = pytest.mark.e2e

VECTOR = "[" + ",".join(["0.04"] * 511 + ["1"]) + "]"


def _user(engine: Engine, *, persona: uuid.UUID | None = None,
          sensitivity: str | None = None) -> dict[str, str]:
    """A user with a session (in ``persona``), its message and one memory learned from it."""
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "I like jazz")], user_id=user, instance_id=persona)
        message, seq = conn.execute(text(
            "SELECT id, seq FROM engine.chat_messages WHERE session_id = :s"), {"s": sid}).one()
        memory = conn.execute(text(
            "INSERT INTO engine.companion_memories (session_id, user_id, instance_id, content,"
            " category, importance, sensitivity, source_seqs, embedding) VALUES (:s, :u, :i,"
            " 'Likes jazz', 'fact', 0.8, :sens, :seqs, CAST(:v AS vector)) RETURNING id"),
            {"s": sid, "u": user, "i": persona, "sens": sensitivity, "seqs": [seq],
             "v": VECTOR}).scalar_one()
    return {"user": str(user), "session": str(sid), "message": str(message),
            "memory": str(memory)}


def test_eros_forget_purges_the_users_stored_recall_results_in_every_scope(
        engine: Engine, start_worker: Starter, redis_url: str, stack_env: dict[str, str],
        tmp_path: Path) -> None:
    client = Celery(broker=redis_url, backend=redis_url)
    backend = redis.Redis.from_url(redis_url)

    def stored_recall(user: str, persona: uuid.UUID | None = None) -> str:
        """A real eros.recall for ``user`` (in ``persona``'s relationship when given); the
        result backend's key holding its answer."""
        result = client.send_task("eros.recall", args=[user, "music"],
                                  kwargs={"instance_id": str(persona) if persona else None},
                                  queue="eros.recall")
        payload = result.get(timeout=60)
        assert payload["memories"], user
        key = f"celery-task-meta-{result.id}"
        assert backend.exists(key)
        return key

    env = {**stack_env, "EROS_EMBEDDED": "never", "EROS_DATA_DIR": str(tmp_path)}
    bystander = _user(engine)
    persona = uuid.uuid4()
    cases = [("user", _user(engine), lambda s: [s["user"]]),
             ("persona", _user(engine, persona=persona),
              lambda s: [s["user"], "--persona", str(persona)]),
             ("memory", _user(engine), lambda s: ["--memory", s["memory"]]),
             ("message", _user(engine), lambda s: ["--message", s["message"]]),
             ("session", _user(engine), lambda s: ["--session", s["session"]]),
             ("sensitive", _user(engine, sensitivity="health"),
              lambda s: [s["user"], "--sensitive", "health"])]
    # The recall results must outlive the test (30 s by default): on a loaded machine the six
    # erasures below take longer than that, and an expired key would pass every "purged" check.
    start_worker("w1", concurrency=1, EROS_RECALL_RESULT_EXPIRES_SECS="3600")
    kept = stored_recall(bystander["user"])
    for scope, seeded, args in cases:
        key = stored_recall(seeded["user"], persona if scope == "persona" else None)
        res = run_cli(env, "forget", *args(seeded), "--yes", "--json")
        assert res.code == 0, (scope, res.err)
        doc = json.loads(res.out)
        assert doc["memories"] == 1 and doc["results_purged"] == 1, (scope, doc)
        assert not backend.exists(key), scope  # gone at once, not in ≤ 30 s
        with engine.connect() as conn:
            logged = conn.execute(text("SELECT scope FROM engine.erasure_log WHERE id = :i"),
                                  {"i": doc["erasure_id"]}).scalar_one()
        assert logged == scope
    assert backend.exists(kept)  # another user's result is not touched
    # every scope is in the erasure log, and `eros erasures` shows each
    listed = run_cli(env, "erasures", "--json")
    assert listed.code == 0, listed.err
    assert {r["scope"] for r in json.loads(listed.out)} == set(SCOPES)
    table = run_cli(env, "erasures")
    assert table.code == 0, table.err
    shown = {line.split()[4] for line in table.out.strip().splitlines()}
    assert shown == set(SCOPES), table.out
    # without REDIS_URL there is no result backend to reach: said so, nothing fails
    no_redis = {k: v for k, v in env.items() if k != "REDIS_URL"}
    res = run_cli(no_redis, "forget", bystander["user"], "--yes")
    assert res.code == 0, res.err
    assert "stored recall results purged: none looked for (REDIS_URL unset" in res.out


def test_a_relabel_tasks_erasure_purges_the_users_stored_recall_results(
        engine: Engine, start_worker: Starter, redis_url: str) -> None:
    """``eros.relabel_sensitivity`` erases a row it labels with a label its user withheld (as
    ``forget --sensitive`` would): the recall result that returned that row goes with it."""
    from eros.privacy.db import consent_sql

    seeded = _user(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE engine.companion_memories SET content = 'Has asthma',"
                          " created_at = now() - interval '1 day' WHERE id = :i"),
                     {"i": seeded["memory"]})
        consent_sql.withhold(conn, uuid.UUID(seeded["user"]), ["health"])
    start_worker("w1", concurrency=1)
    client = Celery(broker=redis_url, backend=redis_url)
    recalled = client.send_task("eros.recall", args=[seeded["user"], "music"],
                                queue="eros.recall")
    assert [m["content"] for m in recalled.get(timeout=60)["memories"]] == ["Has asthma"]
    key = f"celery-task-meta-{recalled.id}"
    backend = redis.Redis.from_url(redis_url)
    assert backend.exists(key)
    done = client.send_task("eros.relabel_sensitivity", kwargs={},
                            queue="eros.consolidate").get(timeout=60)
    assert done["outcome"] == "relabelled" and done["erased"] == 1, done
    assert not backend.exists(key)
