"""``eros reembed`` as a subprocess: dry run, legacy stamping, the dimension guard."""

from __future__ import annotations

import json

from sqlalchemy import Engine, text

from tests.cli.conftest import Cli


def _seed(engine: Engine, model: str | None, n: int) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
            " embedding_model) SELECT gen_random_uuid(), 'm' || g, 'fact',"
            " CAST(array_fill(CAST(1 AS real), ARRAY[512]) AS vector), :m"
            " FROM generate_series(1, :n) g"), {"m": model, "n": n})


def test_dry_run_stamp_legacy_and_the_dimension_guard(cli: Cli, engine: Engine) -> None:
    _seed(engine, None, 4)
    _seed(engine, "local-hash", 2)
    dry = cli("reembed", "--dry-run", "--json", env={"EROS_PROVIDERS": "offline"})
    assert dry.code == 0, dry.err
    assert json.loads(dry.out) == {"model": "local-hash", "pending": 4}
    stamped = cli("reembed", "--stamp-legacy", "--json", env={"EROS_PROVIDERS": "offline"})
    assert stamped.code == 0 and json.loads(stamped.out) == {"stamped": 4}
    after = cli("reembed", "--dry-run", "--json", env={"EROS_PROVIDERS": "offline"})
    assert json.loads(after.out)["pending"] == 0
    wrong = cli("reembed", "--dim", "1024", env={"EROS_PROVIDERS": "offline"})
    assert wrong.code == 1
    assert "holds 512 dimensions" in wrong.err and "docs/operations.md" in wrong.err


def test_offline_run_reports_progress_and_moves_every_row(cli: Cli, engine: Engine) -> None:
    _seed(engine, "voyage-3.5-lite", 25)
    run = cli("reembed", env={"EROS_PROVIDERS": "offline", "REEMBED_BATCH": "10"})
    assert run.code == 0, run.err
    assert "re-embedding with local-hash" in run.err  # the progress bar, on stderr
    assert run.out.startswith("25 memories re-embedded with local-hash in 3 batches")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                 " WHERE embedding_model = 'local-hash'")).scalar_one() == 25
