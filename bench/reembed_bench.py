"""Re-embedding throughput, and recall latency while a re-embed runs (issue 18).

Ours: ``eros.recall.services.reembed.Reembedder`` — batches of REEMBED_BATCH texts (Voyage's
maximum,
1000) in one request each, one UPDATE per batch. Baseline in the same run: the reference's write
shape applied to re-embedding — one embedding request and one committed UPDATE per memory —
over a sample (``--baseline``), as its rate is all that is compared.

Recall: before the re-embed (every row on the old model: one search) and during it (users whose
rows are on both models get one exact search per model, interleaved by rank), from a thread that
keeps recalling random users (``eros.recall.services.recall.recall``, strategy ``decay``, K 10)
while
the re-embed runs in the main thread. Both talk to the fake Voyage server (testkit/fakes, the
real voyageai SDK over HTTP, no added latency: what is measured is our side — JSON of 1000×512
floats each way, the UPDATE, the fake's hashing) in this process, on the same 2 cores.

    python -m bench.reembed_bench [--memories 100000] [--users 1000] [--baseline 2000]
                                  [--batch 1000] [--without-hnsw] [--no-record] [--json F]

Uses ``EROS_BENCH_DATABASE_URL`` (a superuser URL; a scratch database is created and dropped)
or starts an embedded PostgreSQL with pgvector.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, text

from bench.claim_bench import machine, scratch_database
from eros.db.schema import hnsw_index_sql
from eros.providers import make_embedder
from eros.recall.services.recall import recall
from eros.recall.services.reembed import Reembedder
from eros.settings import Settings, load_settings
from testkit.fakes import FakeVoyageServer

OLD, NEW = "voyage-3.5-lite", "voyage-4-lite"
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
OUT = Path(__file__).resolve().parent / "out" / "reembed.json"

# random unit-ish vectors server-side; content long enough to look like a memory (~25 tokens)
LOAD = text("""
INSERT INTO engine.companion_memories (user_id, content, category, embedding, embedding_model)
SELECT (CAST(:users AS uuid[]))[1 + g % cardinality(CAST(:users AS uuid[]))],
       'memory ' || g || ': likes jazz on rainy evenings, works late, lives near the river',
       (ARRAY['fact','preference','event','emotion','relation'])[1 + g % 5],
       (SELECT CAST(array_agg(CAST(random() - 0.5 AS real)) AS vector)
          FROM generate_series(1, 512) WHERE g > 0),
       :model
  FROM generate_series(1, :n) AS g
""")


def load(engine: Engine, users: list[uuid.UUID], n: int) -> float:
    started = time.perf_counter()
    step = 20_000
    for first in range(0, n, step):
        with engine.begin() as conn:
            conn.execute(LOAD, {"users": users, "n": min(step, n - first), "model": OLD})
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(
            text("VACUUM ANALYZE engine.companion_memories"))
    return time.perf_counter() - started


def recall_loop(engine: Engine, settings: Settings, users: list[uuid.UUID], stop: threading.Event,
                out: list[tuple[float, str]], limit: int | None = None) -> None:
    """Recall random users until ``stop`` (or ``limit`` recalls); (ms, plan) per recall."""
    embedder = make_embedder(settings)
    rng = random.Random(7)
    while not stop.is_set() and (limit is None or len(out) < limit):
        started = time.perf_counter()
        result = recall(engine, embedder, rng.choice(users), "what does she do in the evening?",
                        strategy="decay", k=10, settings=settings)
        out.append(((time.perf_counter() - started) * 1000, result.plan))


def baseline(engine: Engine, settings: Settings, sample: int) -> dict[str, float]:
    """One request and one committed UPDATE per memory (the reference's write shape)."""
    embedder = make_embedder(settings, model=NEW)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, content FROM engine.companion_memories"
                                 " WHERE embedding_model = :m ORDER BY id LIMIT :n"),
                            {"m": OLD, "n": sample}).all()
    started = time.perf_counter()
    for row in rows:
        vector = embedder.embed([row.content], input_type="document").vectors[0]
        with engine.begin() as conn:
            conn.execute(text("UPDATE engine.companion_memories SET embedding = CAST(:v AS vector),"
                              " embedding_model = :m WHERE id = :i"),
                         {"v": "[" + ",".join(map(repr, vector)) + "]", "m": NEW, "i": row.id})
    seconds = time.perf_counter() - started
    with engine.begin() as conn:  # put them back so ours re-embeds every row
        conn.execute(text("UPDATE engine.companion_memories SET embedding_model = :m"
                          " WHERE embedding_model = :n"), {"m": OLD, "n": NEW})
    return {"rows": len(rows), "seconds": seconds, "rows_per_s": len(rows) / seconds}


def _stats(samples: list[tuple[float, str]]) -> dict[str, Any]:
    ms = [s[0] for s in samples]
    if not ms:
        return {"recalls": 0}
    p95 = statistics.quantiles(ms, n=20)[-1] if len(ms) >= 2 else ms[0]
    return {"recalls": len(ms), "median_ms": statistics.median(ms), "p95_ms": p95,
            "max_ms": max(ms), "plans": dict(Counter(s[1] for s in samples))}


def run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    engine = create_engine(url, pool_size=4)
    voyage = FakeVoyageServer()
    voyage.start()
    try:
        settings = load_settings(database_url=url, voyage_api_key="bench",
                                 voyage_base_url=voyage.url, embedding_model=OLD,
                                 reembed_batch=args.batch, provider_max_retries=0,
                                 embedding_timeout_secs=60)
        users = [uuid.uuid4() for _ in range(args.users)]
        with engine.begin() as conn:  # a migrated database has it only where a plan reads it
            conn.execute(text("DROP INDEX IF EXISTS engine.ix_companion_memories_embedding_hnsw"
                              if args.without_hnsw else
                              hnsw_index_sql().replace("INDEX ", "INDEX IF NOT EXISTS ", 1)))
        load_s = load(engine, users, args.memories)
        base = baseline(engine, settings, args.baseline)
        before: list[tuple[float, str]] = []
        recall_loop(engine, settings, users, threading.Event(), before, limit=args.recalls)
        during: list[tuple[float, str]] = []
        stop = threading.Event()
        reader = threading.Thread(target=recall_loop,
                                  args=(engine, settings, users, stop, during))
        worker = Reembedder(settings, engine, make_embedder(settings, model=NEW))
        reader.start()
        try:
            report = worker.run()
        finally:
            stop.set()
            reader.join()
        with engine.connect() as conn:
            left = conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                     " WHERE embedding_model IS DISTINCT FROM :m"),
                                {"m": NEW}).scalar_one()
        return {"memories": args.memories, "users": args.users, "batch": args.batch,
                "hnsw": not args.without_hnsw,
                "load_s": load_s, "baseline": base,
                "ours": {"rows": report.done, "seconds": report.elapsed_secs,
                         "rows_per_s": report.done / report.elapsed_secs,
                         "batches": report.batches, "tokens": report.tokens,
                         "left_on_old_model": left},
                "recall_before": _stats(before), "recall_during": _stats(during),
                "machine": machine()}
    finally:
        voyage.stop()
        engine.dispose()


def render(doc: dict[str, Any]) -> str:
    o, b = doc["ours"], doc["baseline"]
    million_s = 1_000_000 / o["rows_per_s"]
    lines = [
        f"re-embedding {doc['memories']:,} memories of {doc['users']:,} users "
        f"(load {doc['load_s']:.1f} s), batch {doc['batch']}"
        + ("" if doc.get("hnsw", True) else ", HNSW index dropped"),
        "",
        "| path | rows | seconds | rows/s | requests |",
        "|---|---|---|---|---|",
        f"| ours (batch {doc['batch']}, one UPDATE a batch) | {o['rows']:,} | {o['seconds']:.1f} "
        f"| {o['rows_per_s']:,.0f} | {o['batches']:,} |",
        f"| baseline (one request + commit a row) | {b['rows']:,} | {b['seconds']:.1f} "
        f"| {b['rows_per_s']:,.0f} | {b['rows']:,} |",
        "",
        f"ours / baseline: {o['rows_per_s'] / b['rows_per_s']:.1f}x; 1M memories at this rate: "
        f"{million_s / 60:.1f} min"
        + (" (measured)" if doc["memories"] >= 1_000_000 else " (extrapolated, not measured)")
        + f"; rows left on the old model: {o['left_on_old_model']}",
        "",
        "| recall (decay, K 10) | recalls | median ms | p95 ms | max ms | plans |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("recall_before", "recall_during"):
        r = doc[name]
        if not r.get("recalls"):
            lines.append(f"| {name.removeprefix('recall_')} | 0 | – | – | – | – |")
            continue
        lines.append(f"| {name.removeprefix('recall_')} | {r['recalls']:,} | "
                     f"{r['median_ms']:.2f} | {r['p95_ms']:.2f} | {r['max_ms']:.1f} | "
                     f"{r['plans']} |")
    lines.append(f"\nmachine: {doc['machine']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reembed_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--baseline", type=int, default=2000, help="rows of the baseline run")
    parser.add_argument("--batch", type=int, default=1000, help="REEMBED_BATCH")
    parser.add_argument("--recalls", type=int, default=200, help="recalls before the run")
    parser.add_argument("--without-hnsw", action="store_true",
                        help="drop the HNSW index first (recall's default plans do not use it)")
    parser.add_argument("--no-record", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument("--json", type=Path, default=None, help="write results here")
    args = parser.parse_args(argv)
    if args.baseline > args.memories or min(args.memories, args.users, args.batch) < 1:
        parser.error("need --memories >= --baseline and positive sizes")
    with scratch_database() as url:
        doc = run(url, args)
    printed = render(doc)
    print(printed)
    path = args.json or (None if args.no_record else OUT)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, default=str))
    if not args.no_record:
        command = "python -m bench.reembed_bench " + " ".join(
            sys.argv[1:] if argv is None else argv)
        with RESULTS.open("a", encoding="utf-8") as fh:
            fh.write(f"\n## Re-embedding\n\n`{command.strip()}`\n\n{printed}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
