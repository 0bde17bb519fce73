"""``eros consent`` shows and lifts a user's withdrawn labels, ``eros relabel`` labels rows
written without one (issue 32); as subprocesses."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import Engine, text

from eros.privacy.db import consent_sql
from testkit.data import add_session
from testkit.fakes import FakeLLMServer, Reply
from tests.cli.conftest import Cli
from tests.integration.test_turns_erasure import _index


def test_consent_lists_and_lifts_and_relabel_reports_progress(cli: Cli,
                                                             engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        consent_sql.withhold(conn, user, ["health", "beliefs"])
        conn.execute(text("INSERT INTO engine.companion_memories (user_id, content, category,"
                          " created_at) VALUES (:u, 'Has asthma', 'fact',"
                          " now() - interval '1 hour')"), {"u": user})
    res = cli("consent", str(user), "--allow", "health", "--json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["allowed"] == ["health"] and [w["label"] for w in doc["withheld"]] == ["beliefs"]
    assert cli("consent", str(user), "--allow", "spicy").code == 2
    with engine.begin() as conn:  # an indexed turn (issue 31): the relabel labels it too
        sid = add_session(conn, [("user", "my asthma is back")], user_id=user)
    _index(engine, sid)
    res = cli("relabel", "--batch", "10", "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out) | {"scanned": 0} == {
        "scanned": 0, "labelled": 1, "erased": 0, "total_scanned": 1, "total_labelled": 1,
        "done": True, "turns_scanned": 1, "turns_labelled": 1, "turns_erased": 0,
        "total_turns_scanned": 1, "total_turns_labelled": 1}


def test_relabel_with_the_model(cli: Cli, engine: Engine, llm: FakeLLMServer) -> None:
    """`eros relabel --labeller model` asks the configured model (the fake OpenRouter server,
    through the real openai SDK) and reports its calls, unreadable entries and cost."""
    user = uuid.uuid4()
    with engine.begin() as conn:
        for content in ("Has asthma", "Likes jazz"):
            conn.execute(text("INSERT INTO engine.companion_memories (user_id, content,"
                              " category, created_at) VALUES (:u, :c, 'fact',"
                              " now() - interval '1 hour')"), {"u": user, "c": content})
    assert cli("relabel", "--labeller", "guess").code == 2
    offline = cli("relabel", "--labeller", "model")  # no OPENROUTER_API_KEY: refused
    assert offline.code == 1 and "OPENROUTER_API_KEY" in offline.err, offline.err
    llm.set_responder(lambda request: Reply(json.dumps({"labels": {
        str(n["n"]): "health" if "asthma" in n["note"] else None
        for n in json.loads(request["messages"][-1]["content"])}})))
    res = cli("relabel", "--labeller", "model", "--json",
              env={"OPENROUTER_API_KEY": "k", "OPENROUTER_BASE_URL": llm.url})
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert (doc["scanned"], doc["labelled"], doc["unreadable"], doc["calls"], doc["done"]) == (
        2, 1, 0, 1, True)
    assert doc["cost_usd"] > 0
    with engine.connect() as conn:
        assert conn.execute(text("SELECT sensitivity FROM engine.companion_memories WHERE"
                                 " content = 'Has asthma'")).scalar_one() == "health"
    assert "Has asthma" not in res.err + res.out


def test_a_relabel_erasure_purges_the_users_stored_recall_results(
        cli: Cli, engine: Engine, db_url: str, redis_url: str) -> None:
    """A row the relabel labels with a label its user withheld is erased as `forget
    --sensitive` erases — and, as after every forget, the user's stored recall results (which
    may hold that row) are deleted from the real Redis result backend at once."""
    import redis

    from eros.settings import load_settings
    from eros.tasks import results
    from eros.tasks.app import create_app

    user, other = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        consent_sql.withhold(conn, user, ["health"])
        conn.execute(text("INSERT INTO engine.companion_memories (user_id, content, category,"
                          " created_at) VALUES (:u, 'Has asthma', 'fact',"
                          " now() - interval '1 hour')"), {"u": user})
    app = create_app(load_settings(database_url=db_url, redis_url=redis_url))
    for task_id, owner in (("mine", user), ("theirs", other)):
        app.backend.store_result(task_id, {"memories": [{"content": "Has asthma"}]}, "SUCCESS")
        results.keep_briefly(app, str(owner), task_id, 30)
    backend = redis.Redis.from_url(redis_url)
    keys = {t: app.backend.get_key_for_task(t) for t in ("mine", "theirs")}
    res = cli("relabel", "--json", env={"REDIS_URL": redis_url})
    assert res.code == 0, res.err
    assert json.loads(res.out)["erased"] == 1
    assert not backend.exists(keys["mine"]) and backend.exists(keys["theirs"])
