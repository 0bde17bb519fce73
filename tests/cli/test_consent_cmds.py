"""``eros consent`` shows and lifts a user's withdrawn labels, ``eros relabel`` labels rows
written without one (issue 32); as subprocesses."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import Engine, text

from eros.db import consent_sql
from tests.cli.conftest import Cli
from tests.fakes import FakeLLMServer, Reply


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
    res = cli("relabel", "--batch", "10", "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out) | {"scanned": 0} == {
        "scanned": 0, "labelled": 1, "erased": 0, "total_scanned": 1, "total_labelled": 1,
        "done": True}


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
