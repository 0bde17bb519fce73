"""``eros recall`` as a subprocess: DATABASE_URL = this test's database, EMBEDDING_DIM=512, no
API keys and EROS_OFFLINE_EMBEDDER=hash (the seeded vectors are hash embeddings, so the query
must be one too), nothing else from the shell."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Engine

from eros.providers.offline.hashing import hash_embedding
from tests.cli.conftest import Cli
from tests.support.memories import Mem, add

HASH = {"EROS_OFFLINE_EMBEDDER": "hash"}


def _seed(engine: Engine) -> tuple[uuid.UUID, uuid.UUID]:
    user, persona = uuid.uuid4(), uuid.uuid4()
    now = datetime.now(UTC)

    def mem(content: str, category: str, **kw: object) -> Mem:
        return Mem(user, content, category, hash_embedding(content, 512), **kw)  # type: ignore[arg-type]

    with engine.begin() as conn:
        add(conn, now, mem("lives in Shanghai near the river", "fact", importance=0.7),
            mem("likes jazz and mocha", "preference", importance=0.3),
            mem("talked with the persona about Shanghai food", "event", instance_id=persona),
            Mem(uuid.uuid4(), "lives in Shanghai near the river", "fact",
                hash_embedding("lives in Shanghai near the river", 512)))
    return user, persona


def test_recall_json(cli: Cli, engine: Engine) -> None:
    user, persona = _seed(engine)
    res = cli("recall", str(user), "lives in Shanghai", "--instance", str(persona),
              "--strategy", "decay", "--k", "2", "--json", env=HASH)
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert out["strategy"] == "decay" and out["scope"] == "both" and out["k"] == 2
    assert out["plan"] == "exact" and out["exact"] is True
    assert out["memories"][0]["content"] == "lives in Shanghai near the river"
    assert len(out["memories"]) == 2
    assert {m["layer"] for m in out["memories"]} <= {"profile", "relationship"}
    assert set(out["memories"][0]) == {"kind", "id", "content", "category", "importance",
                                       "created_at", "layer", "similarity", "score",
                                       "sources", "source_fallback", "sensitivity"}
    assert out["memories"][0]["sources"] is None  # written without provenance
    assert {"embed", "count", "search", "rank", "total"} <= set(out["timings_ms"])


def test_recall_render_and_scopes(cli: Cli, engine: Engine) -> None:
    user, persona = _seed(engine)
    res = cli("recall", str(user), "Shanghai", "--render", "zh", env=HASH)
    assert res.code == 0, res.err
    assert "\n\n【基本信息】\n- 「lives in Shanghai near the river" in res.out
    assert res.out.startswith("以下是")  # the notes-not-instructions header
    assert "persona" not in res.out  # no --instance: profile layer only
    res = cli("recall", str(user), "Shanghai", "--instance", str(persona), "--scope",
              "relationship", "--json", "--render", "en", env=HASH)
    out = json.loads(res.out)
    assert [m["content"] for m in out["memories"]] == [
        "talked with the persona about Shanghai food"]
    assert out["prompt"].endswith(
        "\n\nRecent events:\n- “talked with the persona about Shanghai food”")


def test_recall_human_output_and_errors(cli: Cli, engine: Engine) -> None:
    user, _ = _seed(engine)
    res = cli("recall", str(user), "jazz", env=HASH)
    assert res.code == 0, res.err
    assert "strategy fused" in res.out and "likes jazz and mocha" in res.out  # the default
    empty = cli("recall", str(uuid.uuid4()), "anything", "--render", "en", env=HASH)
    assert empty.code == 0 and empty.out.strip() == "(No memories about the user yet.)"
    bad = cli("recall", str(user), "x", "--scope", "relationship", env=HASH)
    assert bad.code == 1 and "needs an instance" in bad.err
    assert cli("recall", "not-a-uuid", "x", env=HASH).code == 2


def test_the_celery_task_returns_json(db_url: str, engine: Engine,
                                      cli_env: Callable[..., dict[str, str]]) -> None:
    """``eros.recall`` run through Celery's eager ``apply`` in a fresh process (importing
    eros.worker builds the app from the environment; the broker is never contacted)."""
    user, persona = _seed(engine)
    code = (
        "import json, sys; from eros.worker import app;"
        "t = app.tasks['eros.recall'];"
        f"r = t.apply(args=['{user}', 'Shanghai'], kwargs={{'instance_id': '{persona}',"
        " 'strategy': 'composite', 'k': 2, 'labels': 'en'}).get();"
        "bad = t.apply(args=['nobody', 'x']).get();"
        "print(json.dumps({'ok': r, 'bad': bad}))")
    env = cli_env(DATABASE_URL=db_url, REDIS_URL="redis://127.0.0.1:9/0", **HASH)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ok"]["strategy"] == "composite" and len(out["ok"]["memories"]) == 2
    assert "\n\nAbout the user:\n- “lives in Shanghai" in out["ok"]["prompt"]
    assert out["bad"]["error"] == "user_id: must be a UUID"


def test_cluster_one_user_then_every_due_user_then_drop(cli: Cli, engine: Engine,
                                                        db_url: str) -> None:
    import numpy as np

    from tests.support.memories import copy_rows, random_unit

    heavy, small = uuid.uuid4(), uuid.uuid4()
    now = datetime.now(UTC)
    for user, n in ((heavy, 400), (small, 100)):
        vectors = random_unit(np.random.default_rng(n), n)
        copy_rows(db_url, ((user, None, f"m {i}", "fact", 0.5, now, vectors[i])
                           for i in range(n)))
    res = cli("cluster", str(small), "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out) | {"read_ms": 0, "cluster_ms": 0, "write_ms": 0} == {
        "user_id": str(small), "outcome": "clustered", "rows": 100, "cells": 10, "late": 0,
        "read_ms": 0, "cluster_ms": 0, "write_ms": 0}
    # due: the heavy user (never clustered) and the small one (below half the threshold)
    res = cli("cluster", env={"RECALL_CELL_MIN_ROWS": "300"})
    assert res.code == 0, res.err
    first, second = res.out.strip().splitlines()
    assert first.startswith(f"{heavy}: 400 memories in 20 cells (0 late)"), res.out
    assert second == f"{small}: cells dropped"
    assert cli("cluster", env={"RECALL_CELL_MIN_ROWS": "300"}).out.strip() == \
        "no user is due for clustering"
    res = cli("cluster", str(heavy), "--drop")
    assert (res.code, res.out.strip()) == (0, f"{heavy}: cells dropped")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM engine.memory_cells").scalar_one() == 0
    assert cli("cluster", "--drop").code == 2


def test_recall_fused_shows_memories_and_the_users_own_turns(cli: Cli, engine: Engine) -> None:
    """``--strategy fused``: memories and indexed turns (engine.memory_turns) in one list,
    each saying what it is; the rendered section quotes the turn, dated."""
    from sqlalchemy import text

    from eros.recall.db import turns_sql

    user, _ = _seed(engine)
    said = "my sister Ana moved to Berlin last month"
    with engine.begin() as conn:
        sid = uuid.uuid4()
        conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id, last_active_at) "
                          "VALUES (:s, :u, now())"), {"s": sid, "u": user})
        seq = conn.execute(text("INSERT INTO engine.chat_messages (session_id, role, content)"
                                " VALUES (:s, 'user', :c) RETURNING seq"),
                           {"s": sid, "c": said}).scalar_one()
        turns_sql.write_turns(conn, [turns_sql.TurnRow(
            seq, sid, user, None, datetime.now(UTC), hash_embedding(said, 512), "local-hash")])
    res = cli("recall", str(user), "sister Ana moved to Berlin", "--strategy", "fused",
              "--json", "--render", "en", env=HASH)
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert out["strategy"] == "fused"
    assert out["turns"][0]["content"] == said and out["turns"][0]["seq"] == seq
    assert {"kind": "turn", "seq": seq} in out["items"]
    assert {i["kind"] for i in out["items"]} == {"turn", "memory"}
    assert "The user said on" in out["prompt"] and said in out["prompt"]
    human = cli("recall", str(user), "sister Ana moved to Berlin", "--strategy", "fused",
                env=HASH)
    assert human.code == 0, human.err
    assert " turns · strategy fused" in human.out and said in human.out


def test_recall_fused_no_sensitive_leaves_out_turns_a_labelled_memory_cites(
        cli: Cli, engine: Engine) -> None:
    """``--no-sensitive``: the turn a superseded crisis memory cites stays out (the turn row
    carries no label of its own: the label is the citing memory's); without it the turn is
    returned with the inherited label."""
    from sqlalchemy import text

    from eros.recall.db import turns_sql

    user = uuid.uuid4()
    said = ["some days I want to hurt myself", "I like jazz a lot"]
    with engine.begin() as conn:
        sid = uuid.uuid4()
        conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id, last_active_at) "
                          "VALUES (:s, :u, now())"), {"s": sid, "u": user})
        seqs = [conn.execute(text("INSERT INTO engine.chat_messages (session_id, role, content)"
                                  " VALUES (:s, 'user', :c) RETURNING seq"),
                             {"s": sid, "c": s}).scalar_one() for s in said]
        turns_sql.write_turns(conn, [turns_sql.TurnRow(
            seq, sid, user, None, datetime.now(UTC), hash_embedding(s, 512), "local-hash")
            for seq, s in zip(seqs, said, strict=True)])
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
            " source_seqs, sensitivity, status) VALUES (:u, 'thought of self-harm', 'emotion',"
            " CAST(:v AS vector), :seqs, 'crisis', 'superseded')"),
            {"u": user, "v": str(hash_embedding("self-harm", 512)), "seqs": [seqs[0]]})

    def turns(*flags: str) -> list[tuple[str, str | None]]:
        res = cli("recall", str(user), "hurt myself", "--strategy", "fused", "--json",
                  *flags, env=HASH)
        assert res.code == 0, res.err
        return [(t["content"], t["sensitivity"]) for t in json.loads(res.out)["turns"]]

    assert turns("--no-sensitive") == [(said[1], None)]
    assert sorted(turns("--include-sensitive")) == [(said[1], None), (said[0], "crisis")]
