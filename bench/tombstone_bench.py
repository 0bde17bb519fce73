"""The cost of the erasure tombstones (issue 26) on the claim path: claim 100 sessions from
1M, then read each claimed session's new turns (what ``begin_attempt`` does before the
extraction) — with the turn read as it was before the tombstones (baseline, verbatim copy)
and as it is now (``repo.READ_NEW_TURNS``: the erasure floor ``erased_through_seq`` and the
``erased_seqs`` exclusion), in the same run on the same database, alternating.

Where the check lives: the claim statement (``repo.CLAIM_IDLE``) is unchanged — no path that
resets the watermark can reach an erased turn because the one statement every extraction
reads its turns with skips them. So the claim itself can only change through the table's
width (two columns, NULL/0 on most rows); the turn read gains two comparisons per turn, on
columns of the session row it reads anyway.

Data: N sessions as in ``bench.claim_bench`` (1% idle and unclassified, spread over 30 days),
four turns for every eligible session, an erasure floor on half of them, one erased turn on a
quarter of them (none with ``--untouched``), and ``--filler`` classified sessions with
tombstoned turns. Each repeat runs in a transaction that is rolled back.

    python -m bench.tombstone_bench [--size 1000000] [--repeats 30] [--filler 100000]
                                    [--untouched]

Uses ``EROS_BENCH_DATABASE_URL`` or starts an embedded PostgreSQL with pgvector.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, TextClause, create_engine, text

from bench.claim_bench import BATCH, IDLE_SECS, LOAD, STALE_SECS, machine, scratch_database
from eros.db.repo import BEGIN_ATTEMPT, CLAIM_IDLE, READ_NEW_TURNS

#: repo.READ_NEW_TURNS before issue 26 (the baseline).
BEFORE_READ = text("""
SELECT s.last_seq, m.role, m.content, m.sent_at, m.seq, m.channel
  FROM engine.chat_sessions AS s
  LEFT JOIN engine.chat_messages AS m ON m.session_id = s.id AND m.seq > :after_seq
 WHERE s.id = :session_id
 ORDER BY m.sent_at, m.seq
""")

TURNS = text("""
INSERT INTO engine.chat_messages (session_id, role, content)
SELECT s.id, CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END, 'turn ' || g
  FROM engine.chat_sessions s CROSS JOIN generate_series(1, 4) AS g
 WHERE s.classified_at IS NULL
""")
# the turns' trigger touched their sessions: idle again, as loaded (created 20 minutes before)
IDLE_AGAIN = text("""
UPDATE engine.chat_sessions SET last_active_at = created_at + interval '20 minutes'
 WHERE classified_at IS NULL
""")
FLOORS = text("""
UPDATE engine.chat_sessions SET erased_through_seq = last_seq - 2
 WHERE classified_at IS NULL AND hashtext(id::text) % 2 = 0
""")
ERASED = text("""
UPDATE engine.chat_sessions SET erased_seqs = ARRAY[last_seq]
 WHERE classified_at IS NULL AND hashtext(id::text) % 4 = 1
""")
FILLER = text("""
UPDATE engine.chat_sessions SET erased_seqs = ARRAY[1, 2, 3]
 WHERE id IN (SELECT id FROM engine.chat_sessions WHERE classified_at IS NOT NULL LIMIT :n)
""")


def load(engine: Engine, size: int, filler: int, *, claimed_tombstoned: bool) -> dict[str, int]:
    with engine.begin() as conn:
        conn.execute(LOAD, {"n": size})
        conn.execute(TURNS)
        conn.execute(IDLE_AGAIN)
        if claimed_tombstoned:
            conn.execute(FLOORS)
            conn.execute(ERASED)
        conn.execute(FILLER, {"n": filler})
        counts = {t: int(conn.execute(text(f"SELECT count(*) FROM engine.{t}")).scalar_one())
                  for t in ("chat_sessions", "chat_messages")}
        counts["sessions_with_erased_seqs"] = int(conn.execute(text(
            "SELECT count(*) FROM engine.chat_sessions WHERE erased_seqs IS NOT NULL"))
            .scalar_one())
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for t in ("chat_sessions", "chat_messages"):
            conn.execute(text(f"VACUUM ANALYZE engine.{t}"))
    return counts


def one_pass(conn: Connection, read: TextClause) -> tuple[float, float, int]:
    """Claim 100, then begin each attempt and read its turns; (claim ms, reads ms, turns)."""
    start = time.perf_counter()
    claims = conn.execute(CLAIM_IDLE, {"idle_secs": IDLE_SECS, "stale_secs": STALE_SECS,
                                       "batch": BATCH}).all()
    claimed = time.perf_counter()
    turns = 0
    for c in claims:
        row = conn.execute(BEGIN_ATTEMPT, {"session_id": c.id, "token": c.claim_token}).one()
        rows = conn.execute(read, {"session_id": c.id,
                                   "after_seq": row.classified_through_seq}).all()
        turns += sum(1 for r in rows if r.seq is not None)
    done = time.perf_counter()
    conn.rollback()
    if len(claims) != BATCH:
        raise RuntimeError(f"claimed {len(claims)} rows, expected {BATCH}")
    return (claimed - start) * 1000, (done - claimed) * 1000, turns


def measure(engine: Engine, repeats: int) -> dict[str, Any]:
    sides = {"before": BEFORE_READ, "after": READ_NEW_TURNS}
    times: dict[str, dict[str, list[float]]] = {k: {"claim": [], "reads": [], "total": []}
                                                for k in sides}
    turns: dict[str, int] = {}
    with engine.connect() as conn:
        for name, read in sides.items():
            for _ in range(3):  # warm caches and plans
                turns[name] = one_pass(conn, read)[2]
        for i in range(repeats):
            for name in (("before", "after") if i % 2 == 0 else ("after", "before")):
                claim_ms, reads_ms, _ = one_pass(conn, sides[name])
                times[name]["claim"].append(claim_ms)
                times[name]["reads"].append(reads_ms)
                times[name]["total"].append(claim_ms + reads_ms)
    return {"turns_read": turns,
            "median_ms": {k: {p: statistics.median(v) for p, v in t.items()}
                          for k, t in times.items()}}


def report(result: dict[str, Any], counts: dict[str, int], info: dict[str, Any]) -> str:
    med = result["median_ms"]
    lines = [f"{'median ms':<28} {'before':>8} {'after':>8} {'after/before':>13}", "-" * 60]
    for part, label in (("claim", "claim of 100 (CLAIM_IDLE)"),
                        ("reads", "100 begin_attempt + turns"), ("total", "claim path total")):
        b, a = med["before"][part], med["after"][part]
        lines.append(f"{label:<28} {b:>8.2f} {a:>8.2f} {a / b:>12.3f}x")
    ratio = med["after"]["total"] / med["before"]["total"]
    lines.append(f"\nturns read per pass: before {result['turns_read']['before']}, after "
                 f"{result['turns_read']['after']} (the tombstoned ones skipped)")
    lines.append(f"claim path after/before = {ratio:.3f} (target <= 1.05): "
                 f"{'PASS' if ratio <= 1.05 else 'MISS'}")
    lines.append(f"data: {counts}")
    lines.append(f"machine: {info}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tombstone_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--filler", type=int, default=100_000)
    parser.add_argument("--untouched", action="store_true",
                        help="no tombstone on the claimed sessions (both sides read the same"
                             " turns: the check's pure overhead)")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args(argv)
    if args.size < 100 * BATCH:
        parser.error(f"--size must be at least {100 * BATCH:,} (1% eligible, batch {BATCH})")
    info = machine()
    with scratch_database() as url:
        engine = create_engine(url, pool_size=1)
        try:
            with engine.connect() as conn:
                info["postgres"] = conn.execute(text("SHOW server_version")).scalar_one()
            started = time.monotonic()
            counts = load(engine, args.size, args.filler,
                          claimed_tombstoned=not args.untouched)
            print(f"  loaded in {time.monotonic() - started:.0f}s", flush=True)
            result = measure(engine, args.repeats)
        finally:
            engine.dispose()
    print(report(result, counts, info))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": info, "data": counts, **result}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
