"""``eros reembed`` as a subprocess: dry run, legacy stamping, the dimension guard."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from sqlalchemy import Engine, text

from tests.cli.conftest import ROOT, Cli
from tests.support.memories import with_hnsw

#: the offline provider with the hash embedder: the seeded rows name it (``local-hash``), and
#: the mechanics tested here do not depend on which offline model runs
OFFLINE = {"EROS_PROVIDERS": "offline", "EROS_OFFLINE_EMBEDDER": "hash"}


def _seed(engine: Engine, model: str | None, n: int) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
            " embedding_model) SELECT gen_random_uuid(), 'm' || g, 'fact',"
            " CAST(array_fill(CAST(1 AS real), ARRAY[512]) AS vector), :m"
            " FROM generate_series(1, :n) g"), {"m": model, "n": n})


def test_dry_run_stamp_legacy_and_one_beside_size(cli: Cli, engine: Engine) -> None:
    _seed(engine, None, 4)
    _seed(engine, "local-hash", 2)
    dry = cli("reembed", "--dry-run", "--json", env=OFFLINE)
    assert dry.code == 0, dry.err
    assert json.loads(dry.out) == {"model": "local-hash", "pending": 4}
    stamped = cli("reembed", "--stamp-legacy", "--json", env=OFFLINE)
    assert stamped.code == 0 and json.loads(stamped.out) == {"stamped": 4}
    after = cli("reembed", "--dry-run", "--json", env=OFFLINE)
    assert json.loads(after.out)["pending"] == 0
    beside = cli("reembed", "--dim", "1024", env=OFFLINE)
    assert beside.code == 0, beside.err
    wrong = cli("reembed", "--dim", "768", env=OFFLINE)
    assert wrong.code == 1
    assert "already holds 1024 dimensions" in wrong.err and "docs/operations.md" in wrong.err


def test_offline_run_reports_progress_and_moves_every_row(cli: Cli, engine: Engine) -> None:
    _seed(engine, "voyage-3.5-lite", 25)
    run = cli("reembed", env={**OFFLINE, "REEMBED_BATCH": "10"})
    assert run.code == 0, run.err
    assert "re-embedding with local-hash" in run.err  # the progress bar, on stderr
    assert run.out.startswith("25 memories re-embedded with local-hash in 3 batches")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                 " WHERE embedding_model = 'local-hash'")).scalar_one() == 25


@pytest.mark.parametrize("hnsw", [False, True])
def test_a_change_of_dimension_beside_switch_drop(cli: Cli, engine: Engine, db_url: str,
                                                  hnsw: bool) -> None:
    """--dim fills columns beside the live ones, --switch makes them live (the schema is then
    the metadata's at the new size: alembic check), --drop-old removes the old ones. The HNSW
    index moves to the new column where there is one (RECALL_QUANTIZED_SCAN=false's database,
    issue 34), and is not made where there is none."""
    if hnsw:
        with_hnsw(engine)
    _seed(engine, "local-hash", 30)
    offline = {**OFFLINE, "REEMBED_BATCH": "8"}
    early = cli("reembed", "--switch", env=offline)
    assert early.code == 1 and "no embedding_next column" in early.err
    fill = cli("reembed", "--dim", "256", env=offline)
    assert fill.code == 0, fill.err
    assert "30 memories re-embedded with local-hash" in fill.out and "--switch" in fill.err
    with engine.connect() as conn:  # live columns untouched while the new ones fill
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories WHERE"
                                 " vector_dims(embedding) = 512 AND vector_dims(embedding_next)"
                                 " = 256")).scalar_one() == 30
    _seed(engine, "local-hash", 2)  # written meanwhile: the switch refuses until caught up
    refused = cli("reembed", "--switch", env=offline)
    assert refused.code == 1 and "2 memories have no local-hash vector" in refused.err
    assert cli("reembed", "--dim", "256", env=offline).code == 0
    switched = cli("reembed", "--switch", env=offline)
    assert switched.code == 0, switched.err
    assert "EMBEDDING_DIM=256" in switched.out
    check = subprocess.run(
        [sys.executable, "-c", "import sys; from alembic import command;"
         " from testkit.services import alembic_config;"
         " command.check(alembic_config(sys.argv[1]))", db_url],
        env={**os.environ, "EMBEDDING_DIM": "256"}, cwd=ROOT, capture_output=True, text=True,
        timeout=120)
    assert check.returncode != 0 and "embedding_old" in check.stdout + check.stderr
    dropped = cli("reembed", "--drop-old", env={**offline, "EMBEDDING_DIM": "256"})
    assert dropped.code == 0, dropped.err
    check = subprocess.run(check.args, env={**os.environ, "EMBEDDING_DIM": "256"}, cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    with engine.connect() as conn:
        assert conn.execute(text(
            "SELECT count(*) FROM engine.memory_sketches WHERE length(sketch) = 256"
        )).scalar_one() == 32
    after = cli("recall", str(_a_user(engine)), "hello", "--json",
                env={**offline, "EMBEDDING_DIM": "256"})
    assert after.code == 0, after.err
    with engine.connect() as conn:
        definition = conn.execute(text(
            "SELECT pg_get_indexdef(to_regclass('engine.ix_companion_memories_embedding_hnsw'))"
        )).scalar()
        assert conn.execute(text("SELECT to_regclass("
                                 "'engine.ix_companion_memories_embedding_next_hnsw')")
                            ).scalar() is None
    if hnsw:
        assert "USING hnsw (embedding vector_cosine_ops) WHERE" in definition
    else:
        assert definition is None


def _a_user(engine: Engine) -> str:
    with engine.connect() as conn:
        return str(conn.execute(text(
            "SELECT user_id FROM engine.companion_memories LIMIT 1")).scalar_one())
