"""Erasure and export at scale (issue 14): ``python -m bench.privacy_bench``.

For each size N, two identical users with N memories (half of them merged into the other
half, with one history row each), two sessions of 20 turns and their classification runs:

* **export** — ours (:func:`eros.privacy.services.export.export_user`, rows streamed from a
server-side
  cursor and written one by one) against the baseline that fetches every row and dumps one
  document; wall time and peak Python heap (tracemalloc) of each, into a byte-counting sink;
* **forget** — ours (:func:`eros.privacy.services.forget.forget_user`: locks, sessions marked read,
  every derived row) on one user against the baseline ``DELETE FROM companion_memories WHERE
  user_id = …`` (what a naive erasure does, leaving history, runs and state) on the other.

Embeddings are left NULL (export never reads them). Uses ``EROS_BENCH_DATABASE_URL`` (a
superuser URL; a scratch database is created and dropped) or an embedded PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
import uuid
from collections.abc import Callable
from typing import IO, Any, cast

from sqlalchemy import Engine, create_engine, text

from bench.claim_bench import machine, scratch_database
from eros.privacy.db import export_sql
from eros.privacy.services.export import export_user
from eros.privacy.services.forget import forget_user

SEED = text("""
WITH s AS (
    INSERT INTO engine.chat_sessions (user_id, last_active_at, classified_at)
    SELECT :u, now() - interval '2 hours', now() FROM generate_series(1, 2) RETURNING id),
msg AS (
    INSERT INTO engine.chat_messages (session_id, role, content)
    SELECT s.id, CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END,
           repeat('a turn of the conversation ', 4)
      FROM s, generate_series(1, 20) g RETURNING 1),
runs AS (
    INSERT INTO engine.classification_runs (session_id, user_id, attempt, outcome)
    SELECT s.id, :u, 1, 'memories' FROM s RETURNING 1)
INSERT INTO engine.companion_memories (user_id, content, category, importance, metadata)
SELECT :u, 'memory number ' || g || ': ' || repeat('something she said once ', 4), 'fact',
       0.5, jsonb_build_object('prompt_version', 'v1', 'source_seq', jsonb_build_array(g, g))
  FROM generate_series(1, :n) g
""")

LINEAGE = text("""
WITH ids AS (SELECT array_agg(id ORDER BY id) AS a FROM engine.companion_memories
              WHERE user_id = :u),
pairs AS (SELECT a[2 * g - 1] AS merged, a[2 * g] AS canonical
            FROM ids, generate_series(1, array_length(a, 1) / 2) AS g),
upd AS (UPDATE engine.companion_memories m SET status = 'merged', replaced_by = p.canonical,
               replaced_at = now() FROM pairs p WHERE m.id = p.merged RETURNING 1)
INSERT INTO engine.memory_history (user_id, action, result_id, source_ids)
SELECT :u, 'merge', canonical, ARRAY[merged] FROM pairs
""")


class Sink:
    """A text stream that only counts what is written."""

    def __init__(self) -> None:
        self.chars = 0

    def write(self, s: str) -> int:
        self.chars += len(s)
        return len(s)


def seed(engine: Engine, n: int) -> uuid.UUID:
    user = uuid.uuid4()
    with engine.begin() as conn:
        conn.execute(SEED, {"u": user, "n": n})
        conn.execute(LINEAGE, {"u": user})
    return user


def measured(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall-clock ms of one call, then peak traced heap MB of a second one (tracemalloc slows
    Python down, so the time is taken without it)."""
    start = time.perf_counter()
    out = fn()
    ms = (time.perf_counter() - start) * 1000
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return ms, peak, out


def baseline_export(engine: Engine, user: uuid.UUID, sink: Sink) -> int:
    """Fetch everything, build one document, dump it."""
    with engine.connect() as conn:
        rows = conn.execute(export_sql.MEMORIES, {"user_id": user}).all()
        sessions = conn.execute(export_sql.SESSIONS, {"user_id": user}).all()
    doc = {"format": "baseline", "memories": [dict(r._mapping) for r in rows],
           "sessions": [dict(r._mapping) for r in sessions]}
    sink.write(json.dumps(doc, default=str))
    return len(rows)


def run(engine: Engine, n: int) -> dict[str, Any]:
    ours_user, base_user = seed(engine, n), seed(engine, n)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    ours_sink, base_sink = Sink(), Sink()
    # export_user only writes to its stream: a counting sink stands in for a file
    ours = measured(lambda: export_user(engine, ours_user, cast(IO[str], ours_sink))["memories"])
    base = measured(lambda: baseline_export(engine, base_user, base_sink))
    assert ours[2] == base[2] == n
    start = time.perf_counter()
    counts = forget_user(engine, ours_user)
    forget_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM engine.companion_memories WHERE user_id = :u"),
                     {"u": base_user})
    naive_ms = (time.perf_counter() - start) * 1000
    assert counts["memories"] == n and counts["history"] == n // 2
    return {"size": n, "export_ms": round(ours[0], 1), "export_peak_mb": round(ours[1], 2),
            "baseline_export_ms": round(base[0], 1),
            "baseline_export_peak_mb": round(base[1], 2), "export_chars": ours_sink.chars,
            "forget_ms": round(forget_ms, 1), "naive_delete_ms": round(naive_ms, 1),
            "forget_counts": counts}


def table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'memories':>9} {'export ms':>10} {'peak MB':>8} {'base ms':>9} {'base MB':>8} "
            f"{'MB ratio':>8} {'forget ms':>10} {'naive ms':>9}")
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = r["baseline_export_peak_mb"] / max(r["export_peak_mb"], 1e-6)
        lines.append(f"{r['size']:>9,} {r['export_ms']:>10.1f} {r['export_peak_mb']:>8.2f} "
                     f"{r['baseline_export_ms']:>9.1f} {r['baseline_export_peak_mb']:>8.2f} "
                     f"{ratio:>8.1f} {r['forget_ms']:>10.1f} {r['naive_delete_ms']:>9.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.privacy_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000",
                        help="memories per user, comma-separated (default 10000,100000)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with scratch_database() as url:
        engine = create_engine(url, pool_size=2)
        try:
            rows = [run(engine, n) for n in sizes]
        finally:
            engine.dispose()
    print(table(rows))
    print(f"machine: {machine()}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "machine": machine()}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
