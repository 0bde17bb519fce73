"""The cost of the erasure tombstones (issue 26) on the claim path, in the same run on the
same database: (1) claim 100 sessions from 1M — ``repo.CLAIM_IDLE`` on our table against the
same statement on a copy of the table as it was before migration 0018 (no tombstone columns,
same rows and indexes), alternating every repeat; (2) read each claimed session's new turns
(what ``begin_attempt`` does before the extraction) — the turn read as it was before the
tombstones (baseline, verbatim copy) and as it is now (``repo.READ_NEW_TURNS``: the erasure
floor ``erased_through_seq`` and the ``erased_seqs`` exclusion), back to back per session.
Ratios are medians of the paired runs (robust to a shared machine's load).

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
from eros.memory.db.repo import BEGIN_ATTEMPT, CLAIM_IDLE, READ_NEW_TURNS

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


BASELINE_TABLE = [
    "CREATE SCHEMA IF NOT EXISTS baseline",
    "CREATE TABLE baseline.chat_sessions (LIKE engine.chat_sessions INCLUDING ALL)",
    "ALTER TABLE baseline.chat_sessions DROP COLUMN erased_through_seq,"
    " DROP COLUMN erased_seqs",
    "INSERT INTO baseline.chat_sessions SELECT * FROM engine.chat_sessions",
]
BASELINE_CLAIM = text(str(CLAIM_IDLE).replace("engine.chat_sessions", "baseline.chat_sessions"))


def baseline_table(engine: Engine) -> None:
    """The sessions table as it was before 0018 (no tombstone columns), same rows and
    indexes: the claim's baseline."""
    with engine.begin() as conn:
        conn.execute(text(BASELINE_TABLE[0]))
        conn.execute(text(BASELINE_TABLE[1]))
        conn.execute(text(BASELINE_TABLE[2]))
        conn.execute(text(BASELINE_TABLE[3].replace("SELECT *", "SELECT " + _columns(conn))))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE baseline.chat_sessions"))


def _columns(conn: Connection) -> str:
    return ", ".join(conn.execute(text(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'baseline'"
        " AND table_name = 'chat_sessions' ORDER BY ordinal_position")).scalars())


def timed_claim(conn: Connection, statement: TextClause) -> float:
    start = time.perf_counter()
    rows = conn.execute(statement, {"idle_secs": IDLE_SECS, "stale_secs": STALE_SECS,
                                    "batch": BATCH}).all()
    elapsed = (time.perf_counter() - start) * 1000
    conn.rollback()
    if len(rows) != BATCH:
        raise RuntimeError(f"claimed {len(rows)} rows, expected {BATCH}")
    return elapsed


def timed_reads(conn: Connection, flip: bool) -> tuple[float, float, int, int]:
    """Claim 100 and begin each attempt; read each session's turns both ways, back to back
    (order flipped every session), so both see the same moment of a shared machine.
    (ms before, ms after, turns before, turns after), rolled back."""
    claims = conn.execute(CLAIM_IDLE, {"idle_secs": IDLE_SECS, "stale_secs": STALE_SECS,
                                       "batch": BATCH}).all()
    ms = {"before": 0.0, "after": 0.0}
    turns = {"before": 0, "after": 0}
    sides = {"before": BEFORE_READ, "after": READ_NEW_TURNS}
    for k, c in enumerate(claims):
        row = conn.execute(BEGIN_ATTEMPT, {"session_id": c.id, "token": c.claim_token}).one()
        params = {"session_id": c.id, "after_seq": row.classified_through_seq}
        for name in (("before", "after") if (k % 2 == 0) != flip else ("after", "before")):
            start = time.perf_counter()
            rows = conn.execute(sides[name], params).all()
            ms[name] += (time.perf_counter() - start) * 1000
            turns[name] += sum(1 for r in rows if r.seq is not None)
    conn.rollback()
    return ms["before"], ms["after"], turns["before"], turns["after"]


def measure(engine: Engine, repeats: int) -> dict[str, Any]:
    claims: dict[str, list[float]] = {"before": [], "after": []}
    reads: dict[str, list[float]] = {"before": [], "after": []}
    turns = (0, 0)
    with engine.connect() as conn:
        for _ in range(3):  # warm caches and plans
            timed_claim(conn, BASELINE_CLAIM)
            timed_claim(conn, CLAIM_IDLE)
            timed_reads(conn, False)
        for i in range(repeats):
            order = (("before", BASELINE_CLAIM), ("after", CLAIM_IDLE))
            for name, statement in (order if i % 2 == 0 else order[::-1]):
                claims[name].append(timed_claim(conn, statement))
            b, a, tb, ta = timed_reads(conn, i % 2 == 1)
            reads["before"].append(b)
            reads["after"].append(a)
            turns = (tb, ta)
    med = {name: {"claim": statistics.median(claims[name]),
                  "reads": statistics.median(reads[name])} for name in claims}
    for name in med:
        med[name]["total"] = med[name]["claim"] + med[name]["reads"]
    pair = [a / b for a, b in zip(claims["after"], claims["before"], strict=True)]
    read_pair = [a / b for a, b in zip(reads["after"], reads["before"], strict=True)]
    return {"turns_read": {"before": turns[0], "after": turns[1]}, "median_ms": med,
            "median_ratio": {"claim": statistics.median(pair),
                             "reads": statistics.median(read_pair)}}


def report(result: dict[str, Any], counts: dict[str, int], info: dict[str, Any]) -> str:
    med, ratio = result["median_ms"], result["median_ratio"]
    lines = [f"{'median ms':<34} {'before':>8} {'after':>8} {'after/before':>13}", "-" * 66]
    for part, label in (("claim", "claim of 100 (CLAIM_IDLE)"),
                        ("reads", "turn reads of the 100 claimed"),
                        ("total", "claim + reads")):
        b, a = med["before"][part], med["after"][part]
        paired = f" (paired {ratio[part]:.3f}x)" if part in ratio else ""
        lines.append(f"{label:<34} {b:>8.2f} {a:>8.2f} {a / b:>12.3f}x{paired}")
    lines.append(f"\nturns read per pass: before {result['turns_read']['before']}, after "
                 f"{result['turns_read']['after']} (the tombstoned ones skipped)")
    claim = ratio["claim"]
    lines.append(f"claim of 100 after/before (median of paired runs) = {claim:.3f}"
                 f" (target <= 1.05): {'PASS' if claim <= 1.05 else 'MISS'}")
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
            baseline_table(engine)
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
