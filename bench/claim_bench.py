"""Claim latency: one batch of 100 from 10k / 100k / 1M sessions (1% eligible), ours vs the
reference schema, in the same run on the same server.

Why it matters: the claim runs every tick on every replica. The reference has no index for it,
so each tick sorts the whole sessions table (weakness 7) and gets slower as history grows. Ours
is served by the partial index ``ix_chat_sessions_claimable`` (only unfinished sessions are in
it, in ``last_active_at`` order), so a claim should touch O(batch) rows whatever the size.

Method: one database migrated with alembic (schema ``engine``, our table) plus schema
``reference`` holding a copy of the same table with the same columns and rows but only the
primary key. Per size: load N sessions with ``INSERT … SELECT generate_series`` (every 100th
idle and unclassified, the rest classified; ``last_active_at`` spread over 30 days so eligible
rows are interleaved with finished ones), copy them to the reference table, ``VACUUM ANALYZE``.
Each repeat runs the claim inside a transaction that is rolled back, so the eligible set never
changes; the time is the client-side wall time of execute + fetch. One extra rolled-back run
under ``EXPLAIN (ANALYZE, BUFFERS)`` gives the rows and buffers each plan touched.

    python -m bench.claim_bench [--sizes 10000,100000,1000000] [--repeats 30]

Uses ``EROS_BENCH_DATABASE_URL`` (a superuser URL; a scratch database is created and dropped)
or starts an embedded PostgreSQL with pgvector.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, TextClause, create_engine, text

from eros.db.migrate import upgrade
from eros.memory.db.repo import CLAIM_IDLE
from testkit.services import postgres_server, with_database

IDLE_SECS = 1800  # the reference's defaults
STALE_SECS = 600
BATCH = 100


def reference_claim(schema: str) -> TextClause:
    """MISSION.md's reference claim, verbatim but for the schema it runs in."""
    return text(f"""
UPDATE {schema}.chat_sessions
   SET classification_claimed_at = now()
 WHERE id IN (SELECT id FROM {schema}.chat_sessions
               WHERE classified_at IS NULL
                 AND last_active_at < :idle_cutoff
                 AND (classification_claimed_at IS NULL
                      OR classification_claimed_at < :stale_cutoff)
               ORDER BY last_active_at
               LIMIT :batch
               FOR UPDATE SKIP LOCKED)
RETURNING id, user_id, instance_id
""")


REFERENCE_CLAIM = reference_claim("reference")

LOAD = text("""
INSERT INTO engine.chat_sessions (id, user_id, last_active_at, created_at, classified_at)
SELECT gen_random_uuid(), gen_random_uuid(), t.at, t.at - interval '20 minutes',
       CASE WHEN g % 100 = 0 THEN NULL ELSE t.at + interval '35 minutes' END
  FROM generate_series(1, :n) AS g,
       LATERAL (SELECT now() - make_interval(secs => 3600 + (g::bigint * 7919) % 2592000)) AS t(at)
""")


@dataclass
class Side:
    """One schema's figures at one size."""

    median_ms: float
    p95_ms: float
    min_ms: float
    plan_ms: float
    rows_examined: int
    buffers: int
    plan: str


@dataclass
class Row:
    size: int
    eligible: int
    ours: Side
    ref: Side
    same_ids: bool


def machine() -> dict[str, Any]:
    """nproc, CPU model and RAM, recorded next to every result."""
    model = "unknown"
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as fh:
        kib = int(next(line for line in fh if line.startswith("MemTotal")).split()[1])
    return {"nproc": os.cpu_count(), "cpu": model, "ram_gib": round(kib / 2**20, 1),
            "python": platform.python_version(), "kernel": platform.release()}


@contextmanager
def scratch_database() -> Iterator[str]:
    """A migrated scratch database on the bench server, dropped afterwards."""
    given = os.environ.get("EROS_BENCH_DATABASE_URL")
    with (nullcontext_url(given) if given else postgres_server()) as server:
        server = server.replace("postgresql://", "postgresql+psycopg://", 1)
        name = f"eros_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(server, isolation_level="AUTOCOMMIT", pool_size=1)
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = with_database(server, name)
        try:
            upgrade(url)
            yield url
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


@contextmanager
def nullcontext_url(url: str) -> Iterator[str]:
    yield url


def create_reference(engine: Engine) -> None:
    """Same columns and defaults as ours, no index but the primary key (as the reference)."""
    with engine.begin() as conn:
        conn.execute(text("CREATE SCHEMA IF NOT EXISTS reference"))
        conn.execute(text("CREATE TABLE IF NOT EXISTS reference.chat_sessions "
                          "(LIKE engine.chat_sessions INCLUDING DEFAULTS, PRIMARY KEY (id))"))


def load(engine: Engine, size: int) -> int:
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE engine.chat_sessions, reference.chat_sessions CASCADE"))
        conn.execute(LOAD, {"n": size})
        conn.execute(text("INSERT INTO reference.chat_sessions SELECT * FROM engine.chat_sessions"))
        eligible = conn.execute(text(
            "SELECT count(*) FROM engine.chat_sessions WHERE classified_at IS NULL")).scalar_one()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE engine.chat_sessions"))
        conn.execute(text("VACUUM ANALYZE reference.chat_sessions"))
    return int(eligible)


def claim_params(ours: bool) -> dict[str, Any]:
    if ours:
        return {"idle_secs": IDLE_SECS, "stale_secs": STALE_SECS, "batch": BATCH}
    now = datetime.now(UTC)
    return {"idle_cutoff": now - timedelta(seconds=IDLE_SECS),
            "stale_cutoff": now - timedelta(seconds=STALE_SECS), "batch": BATCH}


def timed_claim(conn: Connection, ours: bool) -> tuple[float, set[Any]]:
    """Wall-clock ms of one claim (execute + fetch), rolled back; and the ids it claimed."""
    statement = CLAIM_IDLE if ours else REFERENCE_CLAIM
    params = claim_params(ours)
    start = time.perf_counter()
    rows = conn.execute(statement, params).all()
    elapsed = (time.perf_counter() - start) * 1000
    conn.rollback()
    if len(rows) != BATCH:
        raise RuntimeError(f"claimed {len(rows)} rows, expected {BATCH}")
    return elapsed, {r.id for r in rows}


def explain(conn: Connection, ours: bool) -> tuple[float, int, int, str]:
    """Execution ms, rows examined by scans, shared buffers touched and the plan's shape."""
    statement = CLAIM_IDLE if ours else REFERENCE_CLAIM
    sql = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + str(statement)
    doc = conn.execute(text(sql), claim_params(ours)).scalar_one()
    conn.rollback()
    top = (doc if isinstance(doc, list) else json.loads(doc))[0]
    plan = top["Plan"]
    buffers = sum(plan.get(k, 0) for k in ("Shared Hit Blocks", "Shared Read Blocks",
                                           "Shared Dirtied Blocks"))
    return float(top["Execution Time"]), _rows_examined(plan), int(buffers), _shape(plan)


def _scans(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "Scan" in plan["Node Type"]:
        yield plan
    for child in plan.get("Plans", []):
        yield from _scans(child)


def _rows_examined(plan: dict[str, Any]) -> int:
    """Rows the scans produced plus rows they read and filtered out, over all loops."""
    total = 0
    for scan in _scans(plan):
        loops = scan.get("Actual Loops", 1)
        total += (scan.get("Actual Rows", 0) + scan.get("Rows Removed by Filter", 0)) * loops
    return int(total)


def _shape(plan: dict[str, Any]) -> str:
    """The chain of node types, e.g. ``Update > Nested Loop > Index Scan(ix_…)``."""
    name = str(plan["Node Type"]) + (f"({plan['Index Name']})" if "Index Name" in plan else "")
    kids = plan.get("Plans", [])
    if not kids:
        return name
    return name + " > " + " + ".join(_shape(k) for k in kids)


def measure(engine: Engine, size: int, repeats: int) -> Row:
    """Ours and the reference alternate within each repeat (order flipped every time), so
    both see the same background load on a shared machine."""
    eligible = load(engine, size)
    times: dict[bool, list[float]] = {True: [], False: []}
    ids: dict[bool, set[Any]] = {}
    with engine.connect() as conn:
        for ours in (True, False):
            for _ in range(3):  # warm caches and the plan
                ids[ours] = timed_claim(conn, ours)[1]
        for i in range(repeats):
            for ours in ((True, False) if i % 2 == 0 else (False, True)):
                times[ours].append(timed_claim(conn, ours)[0])
        sides = {ours: _side(times[ours], *explain(conn, ours)) for ours in (True, False)}
    return Row(size, eligible, sides[True], sides[False], ids[True] == ids[False])


def _side(times: list[float], plan_ms: float, examined: int, buffers: int, shape: str) -> Side:
    p95 = statistics.quantiles(times, n=20)[-1] if len(times) >= 2 else times[0]
    return Side(statistics.median(times), p95, min(times), plan_ms, examined, buffers, shape)


def report(rows: list[Row], info: dict[str, Any]) -> str:
    head = (f"{'size':>9} {'eligible':>8} {'ours med ms':>11} {'ours p95':>9} "
            f"{'ref med ms':>10} {'ref p95':>9} {'ref/ours':>8} {'rows ours/ref':>17} "
            f"{'buffers ours/ref':>17} same")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.size:>9,} {r.eligible:>8,} {r.ours.median_ms:>11.2f} {r.ours.p95_ms:>9.2f} "
            f"{r.ref.median_ms:>10.2f} {r.ref.p95_ms:>9.2f} "
            f"{r.ref.median_ms / r.ours.median_ms:>7.1f}x "
            f"{f'{r.ours.rows_examined:,}/{r.ref.rows_examined:,}':>17} "
            f"{f'{r.ours.buffers:,}/{r.ref.buffers:,}':>17} {'yes' if r.same_ids else 'NO'}")
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        growth = last.ours.median_ms / first.ours.median_ms
        verdict = "PASS" if last.ours.median_ms <= 5 and growth <= 2 else "MISS"
        lines.append(f"\nours@{last.size:,} / ours@{first.size:,} = {growth:.2f}x; "
                     f"ours@{last.size:,} median {last.ours.median_ms:.2f} ms "
                     f"(target <= 5 ms and <= 2x): {verdict}")
    lines.append("\nplans (one EXPLAIN ANALYZE run per size; server-side execution time):")
    for r in rows:
        lines.append(f"  {r.size:>9,} ours [{r.ours.plan_ms:6.2f} ms, min wall "
                     f"{r.ours.min_ms:.2f}]: {r.ours.plan}")
        lines.append(f"  {r.size:>9,} ref  [{r.ref.plan_ms:6.2f} ms, min wall "
                     f"{r.ref.min_ms:.2f}]: {r.ref.plan}")
    lines.append(f"\nmachine: {info}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.claim_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="comma-separated session counts (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if not sizes or min(sizes) < 100 * BATCH:  # 1% eligible: a full batch needs 100x
        parser.error(f"every size must be at least {100 * BATCH:,} (1% eligible, batch {BATCH})")
    info = machine()
    rows: list[Row] = []
    with scratch_database() as url:
        engine = create_engine(url, pool_size=1)
        try:
            with engine.connect() as conn:
                info["postgres"] = conn.execute(text("SHOW server_version")).scalar_one()
                info["shared_buffers"] = conn.execute(text("SHOW shared_buffers")).scalar_one()
            create_reference(engine)
            for size in sizes:
                started = time.monotonic()
                rows.append(measure(engine, size, args.repeats))
                print(f"  measured {size:,} sessions in {time.monotonic() - started:.0f}s",
                      flush=True)
        finally:
            engine.dispose()
    print(report(rows, info))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": info, "rows": [asdict(r) for r in rows]},
                                        indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
