"""``eros eval`` as a subprocess: the shipped suite (first two users) offline on a scratch
embedded database, the table and the JSON; a LoCoMo file through its loader; usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import base_env, run_cli
from tests.unit.test_eval_core import LOCOMO

#: the pid file of an ``eros eval`` scratch PostgreSQL (eros/cli/eval_cmd.py)
SCRATCH_PIDS = "eros-eval-*/pg/postmaster.pid"


@pytest.mark.e2e
def test_eval_shipped_suite_prints_the_table_and_writes_json(short_dir: Path) -> None:
    env = base_env(short_dir, EROS_EMBEDDED="auto")
    out_file = short_dir / "figures.json"
    # another eval running on the machine (a developer's) has its own scratch server: only
    # the ones this run could have left count
    running = set(Path("/tmp").glob(SCRATCH_PIDS))
    result = run_cli(env, "eval", "--users", "2", "--json", str(out_file), timeout=240)
    assert result.code == 0, result.err[-3000:]
    assert "recall@10" in result.out and "× base" in result.out
    for system in ("grouped", "decay", "composite", "fused", "baseline"):
        assert system in result.out
    figures = json.loads(out_file.read_text())
    assert figures["users"] == 2 and figures["questions"] == 24
    assert figures["embedder"] == "multilingual-e5-small-q4"
    assert set(figures["systems"]) == {"grouped", "decay", "composite", "fused", "baseline"}
    assert len(figures["answers"]) == 24 * 5
    assert (short_dir / "eval-embeddings.sqlite3").exists()  # the cache, in EROS_DATA_DIR
    assert not set(Path("/tmp").glob(SCRATCH_PIDS)) - running  # its scratch server is gone


@pytest.mark.e2e
def test_eval_reads_a_locomo_file(short_dir: Path) -> None:
    path = short_dir / "locomo10.json"
    path.write_text(json.dumps(LOCOMO))
    result = run_cli(base_env(short_dir, EROS_EMBEDDED="auto"), "eval", "--suite", str(path),
                     "--format", "locomo", timeout=240)
    assert result.code == 0, result.err[-3000:]
    assert "locomo: 2 users, 3 questions" in result.out


def test_eval_usage_errors(short_dir: Path) -> None:
    env = base_env(short_dir)
    assert run_cli(env, "eval", "--answers").code == 2
    assert run_cli(env, "eval", "--format", "locomo").code == 2
    bad = short_dir / "bad.json"
    bad.write_text("[1, 2]")
    res = run_cli(env, "eval", "--suite", str(bad), "--format", "longmemeval")
    assert res.code == 1 and "not a longmemeval file" in res.err
    res = run_cli(env, "eval", "--judge", "llm")
    assert res.code == 1 and "--judge llm needs OPENROUTER_API_KEY" in res.err
    res = run_cli(env, "eval", "--users", "1")  # EROS_EMBEDDED=never: no scratch database
    assert res.code == 1 and "EROS_EMBEDDED=never" in res.err
    # observation replay needs a suite that carries observations (LoCoMo's)
    res = run_cli(env, "eval", "--extractor", "observations", "--users", "1")
    assert res.code == 2 and "--extractor observations needs a suite with observations" in res.err
