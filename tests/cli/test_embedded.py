"""The embedded stack in a temporary data directory: real PostgreSQL with pgvector and a real
Redis, migrated, one session classified end to end, stopped, then reused with its data."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from eros.devstack.embedded import EmbeddedStack
from testkit.data import add_session
from tests.cli.conftest import base_env, run_cli

TURNS = [("user", "I live in Shanghai."), ("user", "I love jazz.")]


def _alive(pid: int) -> bool:
    from eros.devstack.embedded import alive  # zombie-aware: PID 1 may not reap here

    return alive(pid)


def _postmaster_pid(root: Path) -> int | None:
    pidfile = root / "pg" / "postmaster.pid"
    return int(pidfile.read_text().split()[0]) if pidfile.exists() else None


def test_embedded_stack_migrates_classifies_stops_and_is_reused(short_dir: Path) -> None:
    stack = EmbeddedStack(None, None, need_db=True, need_broker=True, root=short_dir)
    services = stack.start()
    try:
        assert services.db_embedded and services.redis_embedded
        assert services.database_url and services.redis_url
        assert services.redis_url.startswith("redis+socket://")
        engine = create_engine(services.database_url)
        with engine.begin() as conn:
            assert conn.execute(text(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
            assert conn.execute(text(  # migrated: the memories table exists
                "SELECT to_regclass('engine.companion_memories')")).scalar()
            user = uuid.uuid4()
            sid = add_session(conn, TURNS, user_id=user)
        # A second process attaches to the running servers (no DATABASE_URL: embedded) ...
        env = base_env(short_dir, EROS_EMBEDDED="auto")
        result = run_cli(env, "classify", str(sid))
        assert result.code == 0, result.err
        assert "wrote 2 memories" in result.out
        status = json.loads(run_cli(env, "status", "--json").out)
        assert status["services"]["database"]["embedded"] is True
        assert status["services"]["broker"] == {"url": services.redis_url, "embedded": True,
                                                "reachable": True}
        # ... and leaving does not stop them under us.
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                     " WHERE user_id = :u"), {"u": user}).scalar() == 2
        engine.dispose()
        pid = _postmaster_pid(short_dir)
        assert pid is not None and _alive(pid)
    finally:
        stack.stop()
    assert not _alive(pid)
    assert not Path(services.redis_url.removeprefix("redis+socket://")).exists()

    # Reused across runs: the data is still there.
    listing = run_cli(base_env(short_dir, EROS_EMBEDDED="auto"), "memories", str(user), "--json")
    assert listing.code == 0, listing.err
    assert {r["content"] for r in json.loads(listing.out)} == {"Lives in Shanghai",
                                                               "Loves jazz"}
    assert _postmaster_pid(short_dir) is None  # that process stopped what it started


@pytest.mark.e2e
def test_run_demo_drains_the_corpus_and_leaves_an_explorable_database(short_dir: Path) -> None:
    env = base_env(short_dir, EROS_EMBEDDED="auto")
    # the offline e5 embedder and judge are CPU work: the budget allows for the tiers beside it
    result = run_cli(env, "run", "--demo", "--demo-timeout", "240", timeout=300)
    assert result.code == 0, result.err[-3000:]
    assert "Dreamt in" in result.out and "40 of 40 sessions classified" in result.out
    assert "eros memories" in result.out and "eros psql" in result.out
    # offline e5 + the offline judge: the move is consolidated and recall answers with it
    assert "multilingual-e5-small-q4" in result.out
    assert "Lives in Shanghai  →  Lives in Tokyo now" in result.out
    assert '"Where do you live these days?"' in result.out
    assert "  1. Lives in Tokyo now" in result.out
    user = result.out.split("eros memories ", 1)[1].split()[0]
    assert _postmaster_pid(short_dir) is None  # everything stopped on exit
    listing = run_cli(env, "memories", user)
    assert listing.code == 0 and "profile" in listing.out
    status = json.loads(run_cli(env, "status", "--json").out)
    assert status["backlog"]["eligible"] == 0 and status["totals"]["classified"] == 40
