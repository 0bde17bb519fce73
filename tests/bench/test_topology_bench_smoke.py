"""Smoke runs of the production-topology benchmarks (issue 27) at tiny sizes: the drain
through PgBouncer against direct, and recall on a streaming replica against the primary.
Nothing is recorded (``nothing_recorded`` of test_bench_smoke applies here too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from bench import drain_bouncer, drain_run, recall_replica_bench
from testkit.topology import Unavailable, pgbouncer_binary
from tests.bench.test_bench_smoke import nothing_recorded  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.bench


@pytest.fixture
def bench_db(pg_server_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EROS_BENCH_DATABASE_URL", pg_server_url)
    return pg_server_url


@pytest.mark.chaos  # two drains with real workers, a minute: runs beside the fast tiers
@pytest.mark.e2e
def test_drain_through_pgbouncer_against_direct(bench_db: str, redis_url: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        pgbouncer_binary()
    except Unavailable as err:
        pytest.skip(str(err))
    monkeypatch.setenv("EROS_BENCH_REDIS_URL", redis_url)
    out = tmp_path / "bouncer.json"
    code = drain_bouncer.main([
        "--modes", "direct,pgbouncer", "--concurrency", "4", "--rounds", "1",
        "--bouncer-pool", "2", "--llm-ms", "50",
        "--embed-ms", "10", "--timeout", "60", "--log-dir", str(tmp_path / "logs"),
        "--json", str(out)])
    assert code == 0, "a correctness check failed; logs in " + str(tmp_path / "logs")
    doc = json.loads(out.read_text())
    runs = doc["runs"]
    assert [r["mode"] for r in runs] == ["direct", "pgbouncer, no client pool"]
    for r in runs:
        assert r["sessions"] == 4 and r["sessions_per_s"] > 0
        assert r["verification"] == {"memories": 4 * drain_run.MEMORIES_PER_SESSION,
                                     "expected": 4 * drain_run.MEMORIES_PER_SESSION,
                                     "duplicates": 0, "unfinished": 0, "wrong_sessions": 0}
        assert r["pg_connections_peak"] >= 1
    # through the pooler PostgreSQL never saw more than PgBouncer's pool
    assert all(r["pg_connections_peak"] <= 2 for r in runs[1:])


def test_recall_on_a_replica_against_the_primary(bench_db: str, tmp_path: Path) -> None:
    out = tmp_path / "replica.json"
    code = recall_replica_bench.main([
        "--memories", "3000", "--users", "10", "--heavy", "2000", "--queries", "5",
        "--warmup", "5", "--no-record", "--json", str(out)])
    assert code == 0
    groups = json.loads(out.read_text())["groups"]
    assert set(groups) == {"light", "heavy"}
    for group in groups.values():
        assert group["primary"]["sources"] == {"primary": 5}
        # the replica answers; a conservative lag reading (another test's write arriving after
        # a quiet spell) may send one to the primary, which the table then shows
        replica = group["replica"]["sources"]
        assert sum(replica.values()) == 5 and replica.get("replica", 0) >= 3, replica
        for s in group.values():
            assert s["queries"] == 5 and 0 < s["median_ms"] <= s["p99_ms"]
            assert s["rows_mean"] > 0
    engine = create_engine(bench_db)
    try:
        with engine.connect() as conn:  # dropped at the end
            assert conn.execute(text("SELECT count(*) FROM pg_database WHERE datname = :d"),
                                {"d": recall_replica_bench.DB}).scalar_one() == 0
    finally:
        engine.dispose()
