"""Nothing personal in any captured output (issue 14): sentinel strings seeded in turns,
model replies and recall queries, real worker, beat and CLI processes, both log formats.
Also: the erasure task through a real worker, and the recall result's short lifetime."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, Reply
from testkit.fakes.llm_server import last_user_text
from testkit.workers import wait_until
from tests.cli.conftest import base_env, run_cli
from tests.e2e.conftest import Starter
from tests.support.privacy import rows_mentioning

pytestmark = pytest.mark.e2e

TURN, REPLY, GARBAGE, QUERY = "zqxturn7731", "zqxreply4402", "zqxgarbage9120", "zqxquery5518"
#: secrets: a database password (the test server trusts local connections, so any password
#: works) and the two API keys (the fakes accept any)
PASSWORD, LLM_KEY, VOYAGE_KEY = "zqxpassword6610", "zqxllmkey6611", "zqxvoyagekey6612"
SENTINELS = (TURN, REPLY, GARBAGE, QUERY, PASSWORD, LLM_KEY, VOYAGE_KEY)


def _responder(request: dict[str, Any]) -> Reply:
    transcript = last_user_text(request)
    if "GARBAGE" in transcript:
        return Reply(f"Sure! {GARBAGE} here they are as prose {{oops")
    return Reply(json.dumps({"memories": [
        {"content": f"Lives at {TURN} street", "category": "fact", "importance": 0.7},
        {"content": f"Likes {REPLY} music", "category": "preference", "importance": 0.5}]}))


def _clean(where: str, output: str) -> None:
    found = [s for s in SENTINELS if s in output]
    assert not found, f"{where} contains {found}"


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_no_personal_text_in_any_output_and_forget_through_the_worker(
        engine: Engine, start_worker: Starter, start_beat: Any, redis_url: str,
        llm: FakeLLMServer, db_url: str, tmp_path: Path, log_format: str) -> None:
    user = uuid.uuid4()
    llm.set_responder(_responder)
    with engine.begin() as conn:
        add_session(conn, [mem_line("fact", 0.7, f"Lives at {TURN} street"),
                           ("assistant", f"Oh, {TURN} is lovely")], user_id=user)
        add_session(conn, [("user", f"GARBAGE {TURN}")], user_id=user)
    db_url = make_url(db_url).set(password=PASSWORD).render_as_string(hide_password=False)
    env = {"EROS_LOG_FORMAT": log_format, "EROS_RESULT_EXPIRES_SECS": "40",
           "DATABASE_URL": db_url, "OPENROUTER_API_KEY": LLM_KEY, "VOYAGE_API_KEY": VOYAGE_KEY}
    worker = start_worker("w1", concurrency=2, **env)
    beat = start_beat(**env)

    def classified() -> bool:
        with engine.connect() as conn:
            return bool(conn.execute(text(
                "SELECT count(*) FROM engine.chat_sessions WHERE classified_at IS NOT NULL"
                " AND user_id = :u"), {"u": user}).scalar_one() == 2)
    wait_until(classified, timeout=60, message="both sessions classified")

    client = Celery(broker=redis_url, backend=redis_url)
    result = client.send_task("eros.recall", args=[str(user), f"where is {QUERY}"],
                              queue="eros.recall")
    payload = result.get(timeout=60)
    assert any(TURN in m["content"] for m in payload["memories"])  # the result has the text …
    r = redis.Redis.from_url(redis_url)
    ttl = r.ttl(f"celery-task-meta-{result.id}")
    assert 0 < ttl <= 40  # … and lives briefly in the backend (EROS_RESULT_EXPIRES_SECS)

    with engine.connect() as conn:
        errors = conn.execute(text(
            "SELECT string_agg(coalesce(last_error, '') || outcome, ' ') FROM"
            " engine.chat_sessions WHERE user_id = :u"), {"u": user}).scalar_one()
        runs = conn.execute(text("SELECT string_agg(coalesce(error, ''), ' ') FROM"
                                 " engine.classification_runs")).scalar_one()
    _clean("error fields", f"{errors} {runs}")
    assert "unparseable" in errors

    cli = base_env(tmp_path, DATABASE_URL=db_url, REDIS_URL=redis_url,
                   EROS_LOG_FORMAT=log_format, EROS_LOG_LEVEL="INFO",
                   OPENROUTER_API_KEY=LLM_KEY, VOYAGE_API_KEY=VOYAGE_KEY)
    exported = tmp_path / "export.json"
    outputs = [run_cli(cli, "export", str(user), "--with-messages", "--output", str(exported)),
               run_cli(cli, "status"), run_cli(cli, "status", "--json"),
               run_cli(cli, "health")]
    assert TURN in exported.read_text()  # the export is the one place the text goes
    with engine.connect() as conn:
        one = conn.execute(text("SELECT id FROM engine.companion_memories WHERE user_id = :u"
                                " LIMIT 1"), {"u": user}).scalar_one()
    gone = client.send_task("eros.forget_memory", args=[str(one)], queue="eros.claim")
    payload = gone.get(timeout=60)
    assert {k: payload[k] for k in ("outcome", "memory_id", "memories", "history")} == {
        "outcome": "forgotten", "memory_id": str(one), "memories": 1, "history": 0}
    forgot = client.send_task("eros.forget_user", args=[str(user)], kwargs={"sessions": True},
                              queue="eros.claim")
    counts = forgot.get(timeout=60)
    assert counts["outcome"] == "forgotten" and counts["memories"] == 1
    assert counts["sessions_deleted"] == 2
    assert rows_mentioning(engine, [user]) == {}
    outputs.append(run_cli(cli, "forget", str(user), "--yes", "--json"))
    assert json.loads(outputs[-1].out)["memories"] == 0  # idempotent

    worker.terminate()
    beat.stop()
    for name, output in (("worker log", worker.log()), ("beat log", beat.log_path.read_text())):
        _clean(name, output)
        assert "succeeded" in output or name == "beat log"
    for res in outputs:
        assert res.code == 0, res.err
        _clean("CLI output", res.out + res.err)
