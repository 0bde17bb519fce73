"""``eros forget`` and ``eros export`` as subprocesses: the export round-trips every memory of
the user (and nothing of anyone else), messages only on request; forget asks first, removes,
and a second forget removes nothing; a bad combination of arguments is a usage error."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, text

from testkit.data import add_session
from tests.cli.conftest import Cli

NOW = datetime.now(UTC)


def _seed(engine: Engine, user: uuid.UUID, n: int, persona: uuid.UUID | None = None
          ) -> set[str]:
    with engine.begin() as conn:
        add_session(conn, [("user", f"hello from {user}"), ("assistant", "hi")], user_id=user)
        ids = conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, instance_id, content, category,"
            " importance, metadata, created_at)"
            " SELECT :u, :i, 'memory ' || g, 'fact', 0.5, jsonb_build_object('g', g), :t"
            " FROM generate_series(1, :n) g RETURNING id"),
            {"u": user, "i": persona, "n": n, "t": NOW - timedelta(days=1)}).scalars().all()
        # one merged into another: lineage in the export
        conn.execute(text("UPDATE engine.companion_memories SET status = 'merged',"
                          " replaced_by = :b, replaced_at = now() WHERE id = :a"),
                     {"a": ids[0], "b": ids[1]})
    return {str(i) for i in ids}


def test_export_round_trip_streams_every_memory_and_nothing_of_others(
        cli: Cli, engine: Engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    user, other, persona = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    mine = _seed(engine, user, 1200, persona) | _seed(engine, user, 3)
    _seed(engine, other, 5)
    out = tmp_path / "u.json"
    res = cli("export", str(user), "--output", str(out), "--format", "1")  # still readable
    assert res.code == 0, res.err
    assert "memories=1203" in res.err and res.out == ""
    doc = json.loads(out.read_text())
    assert doc["format"] == "eros-export/1" and doc["user_id"] == str(user)
    assert {m["id"] for m in doc["memories"]} == mine
    layers = {m["layer"] for m in doc["memories"]}
    assert layers == {"profile", "relationship"}
    merged = [m for m in doc["memories"] if m["status"] == "merged"]
    assert len(merged) == 2 and all(m["lineage"]["replaced_by"] for m in merged)
    target = {m["lineage"]["replaced_by"] for m in merged}
    assert all(m["lineage"]["replaced"] for m in doc["memories"] if m["id"] in target)
    assert len(doc["sessions"]) == 2 and "transcripts" not in doc
    assert str(other) not in out.read_text()
    # messages only on request; standard output by default
    res = cli("export", str(user), "--with-messages")
    doc = json.loads(res.out)
    texts = [m["content"] for t in doc["transcripts"] for m in t["messages"]]
    assert texts.count(f"hello from {user}") == 2


def test_forget_asks_removes_and_is_idempotent(cli: Cli, engine: Engine) -> None:
    user = uuid.uuid4()
    _seed(engine, user, 3)
    res = cli("forget", str(user))  # no --yes, no terminal to answer: nothing happens
    assert res.code != 0 and "Permanently forget" in res.err
    with engine.connect() as conn:
        mid = conn.execute(text("SELECT id FROM engine.companion_memories WHERE user_id = :u"
                                " AND status = 'current' LIMIT 1"), {"u": user}).scalar_one()
    res = cli("forget", "--memory", str(mid), "--yes")
    assert res.code == 0 and "memories=" in res.out
    res = cli("forget", str(user), "--yes", "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out)["memories"] >= 1
    again = json.loads(cli("forget", str(user), "--yes", "--json").out)
    assert again["memories"] == 0 and again["history"] == 0
    assert cli("forget", "--memory", str(mid), "--persona", str(user)).code == 2
    assert cli("forget").code == 2


SECRETS = {"DATABASE_URL": "postgresql://eros:pw-s3cret-42@127.0.0.1:1/eros",
           "REDIS_URL": "redis://:rpw-s3cret-43@127.0.0.1:1/0",
           "OPENROUTER_API_KEY": "sk-s3cret-44", "VOYAGE_API_KEY": "pa-s3cret-45"}


def test_no_password_or_key_in_any_output(cli_env) -> None:  # type: ignore[no-untyped-def]
    """Unreachable servers with passwords in their URLs, and API keys: every command that
    reports on them fails clearly without printing a secret."""
    from tests.cli.conftest import run_cli

    env = cli_env(**SECRETS)
    for args in (("status",), ("status", "--json"), ("health",), ("forget", str(uuid.uuid4()),
                 "--yes"), ("export", str(uuid.uuid4()))):
        res = run_cli(env, *args, timeout=60)
        assert res.code != 0
        output = res.out + res.err
        assert "127.0.0.1:1" in output or "cannot" in output, (args, output)
        assert not [s for s in ("s3cret-42", "s3cret-43", "s3cret-44", "s3cret-45")
                    if s in output], (args, output)
