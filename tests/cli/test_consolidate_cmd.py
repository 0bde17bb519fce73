"""``eros consolidate USER [--dry-run] [--json]`` and ``eros memories USER --history`` as a
subprocess, with the offline providers (no API keys): the dry run shows the plan and writes
nothing, the real run writes it, and the lineage shows what replaced what."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, text

from tests.cli.conftest import Cli


def _seed(engine: Engine) -> uuid.UUID:
    user, now = uuid.uuid4(), datetime.now(UTC)
    near = [0.0] * 512
    near[0], near[1] = 0.95, (1 - 0.95 ** 2) ** 0.5
    with engine.begin() as conn:
        for content, vector, days in (("Likes jazz", [1.0] + [0.0] * 511, 30),
                                      ("Likes jazz music", near, 3),
                                      ("likes jazz music.", near, 2)):
            conn.execute(text(
                "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
                " created_at) VALUES (:u, :c, 'preference', :e, :t)"),
                {"u": user, "c": content, "e": str(vector), "t": now - timedelta(days=days)})
    return user


def _statuses(engine: Engine, user: uuid.UUID) -> dict[str, str]:
    with engine.connect() as conn:
        return dict(conn.execute(text("SELECT content, status FROM engine.companion_memories"
                                      " WHERE user_id = :u"), {"u": user}).all())


def test_dry_run_then_run_then_history(cli: Cli, engine: Engine) -> None:
    user = _seed(engine)
    dry = cli("consolidate", str(user), "--dry-run", "--json")
    assert dry.code == 0, dry.err
    report = json.loads(dry.out)
    assert report["outcome"] == "dry_run" and report["merged"] == 2
    assert report["exact_groups"] == 1 and report["clusters_sent"] == 1
    assert set(_statuses(engine, user).values()) == {"current"}  # nothing written

    run = cli("consolidate", str(user))
    assert run.code == 0, run.err
    assert "cluster 1, category preference:" in run.out and "outcome consolidated" in run.out
    assert _statuses(engine, user) == {"Likes jazz": "merged", "Likes jazz music": "merged",
                                       "likes jazz music.": "current"}

    history = cli("memories", str(user), "--history")
    assert history.code == 0, history.err
    assert "<- merged Likes jazz music" in history.out and "-> merged into" in history.out
    lineage = json.loads(cli("memories", str(user), "--history", "--json").out)
    by_content = {m["content"]: m for m in lineage}
    kept = by_content["likes jazz music."]
    assert {r["content"] for r in kept["replaced"]} == {"Likes jazz", "Likes jazz music"}
    assert by_content["Likes jazz"]["replaced_by"]["content"] == "likes jazz music."
