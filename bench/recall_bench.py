"""Recall latency at scale: every strategy through the API versus the reference's grouped query.

What it answers: with 1,000,000 memories of 512 dimensions across 10,000 users (a few heavy
users with 10,000+), how long does ``eros.recall.recall_by_vector`` take per strategy, for
light and for heavy users, and how does that compare with the reference's query — per category
``ORDER BY embedding <=> :q LIMIT 2`` without HNSW (``SET LOCAL enable_indexscan = off``, so it
is the exact scan the reference effectively ran) — measured in the same run on the same data?

Method: a tuned embedded PostgreSQL (shared_buffers sized to hold the working set) or
``EROS_BENCH_DATABASE_URL``; a database migrated with alembic; the HNSW index dropped, the
memories bulk-loaded by binary COPY (bench/recall_data.py: topic-clustered vectors, Zipf topic
popularity, rows shuffled across users), ``VACUUM ANALYZE``, the HNSW index rebuilt
(m=16, ef_construction=64) and timed (bench/recall_setup.py; a kept database of an older schema
is upgraded in place). Users due for recall cells (the heavy ones) are clustered as beat would,
and the heap and btrees are read into shared_buffers (a restarted server is cold, and a
sequential scan would not warm it). After 400 warm-up queries, each query runs every method in
a rotating order (paired samples: a noisy neighbour slows all methods alike). Times are client
wall time of
the whole call (capped counts, search, ranking, transaction). Quality: for a sample of heavy
queries, the share of the exact answer's ids that each strategy returned (exact = the same
strategy with every search forced exact).

    .venv/bin/python -m bench.recall_bench [--memories 1000000] [--users 10000]
        [--heavy 10000,15000,20000,30000,50000] [--queries 300] [--warmup 400]
        [--data-dir DIR --keep] [--no-record] [--json F]

Without ``--keep`` the bench database is dropped at the end (on ``EROS_BENCH_DATABASE_URL``
too).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, text

from bench import recall_data as rd
from bench.claim_bench import machine
from bench.drain_support import machine_busy
from bench.recall_report import (
    Samples,
    clustered_sentence,
    summary,
    table,
    upgraded,
    write_results,
)
from bench.recall_setup import (
    bench_server,
    cluster_heavy,
    database_url,
    drop_database,
    population,
    prepare,
    sizes,
    warm,
)
from eros.core.categories import CATEGORIES
from eros.recall import recall_by_vector
from eros.recall.db.recall_sql import ScopeFilter
from eros.settings import Settings, load_settings

#: method → (strategy, settings overrides): the API's strategies with the defaults (heavy
#: users clustered: the cells nearest the query), and ``decay`` for comparison reading every
#: sketch (the quantised plan before cells) and through HNSW with iterative scans.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "grouped": ("grouped", {}), "decay": ("decay", {}), "composite": ("composite", {}),
    "decay, all sketches": ("decay", {"recall_cell_probe_share": 1.0}),
    "decay, HNSW": ("decay", {"recall_quantized_scan": False}),
    "grouped, no sources": ("grouped", {})}
#: method → keyword arguments of the call: the same search without reading provenance, the
#: baseline of what returning each memory's ``sources`` costs (issue 24).
CALL_KWARGS: dict[str, dict[str, Any]] = {"grouped, no sources": {"sources": False}}
METHODS = ("reference", *VARIANTS)


# --- the methods ----------------------------------------------------------------------------
REFERENCE = text(
    "SELECT id, content, category, embedding <=> CAST(:q AS vector) AS distance"
    " FROM engine.companion_memories m WHERE {where} AND m.category = :c"
    " ORDER BY m.embedding <=> CAST(:q AS vector) LIMIT 2")


def reference_grouped(engine: Engine, flt: ScopeFilter, q: str) -> list[Any]:
    """The reference: one exact top-2 query per category, no ANN index (index scans off)."""
    stmt = text(str(REFERENCE).replace("{where}", flt.where()))
    out: list[Any] = []
    with engine.connect() as conn, conn.begin():
        conn.execute(text("SET LOCAL enable_indexscan = off"))
        for category in CATEGORIES:
            out += conn.execute(stmt, {**flt.params(), "q": q, "c": category}).all()
    return out


def _vec_text(v: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def run_queries(engine: Engine, pop: rd.Population, users: list[int], n: int, cfg: Settings,
                seed: int) -> dict[str, Samples]:
    """``n`` queries over ``users`` (round robin), every method per query, rotating order."""
    rng = random.Random(seed)
    out = {m: Samples() for m in METHODS}
    calls: dict[str, Callable[[int, list[float]], tuple[int, str]]] = {}

    def api(method: str) -> Callable[[int, list[float]], tuple[int, str]]:
        strategy, overrides = VARIANTS[method]
        settings = cfg.model_copy(update=overrides)

        def call(user: int, q: list[float]) -> tuple[int, str]:
            result = recall_by_vector(engine, pop.user_ids[user], q,
                                      instance_id=pop.instances[user][0], scope="both",
                                      strategy=strategy,  # type: ignore[arg-type]
                                      settings=settings, **CALL_KWARGS.get(method, {}))
            return len(result.memories), result.plan
        return call

    def ref(user: int, q: list[float]) -> tuple[int, str]:
        flt = ScopeFilter(pop.user_ids[user], "both", pop.instances[user][0])
        return len(reference_grouped(engine, flt, _vec_text(q))), "exact"

    calls["reference"] = ref
    for method in VARIANTS:
        calls[method] = api(method)
    for i in range(n):
        user = users[i % len(users)]
        q = rd.query_vectors(pop, user, 1, seed * 100003 + i)[0]
        order = list(METHODS)
        rng.shuffle(order)
        for method in order:
            started = time.perf_counter()
            rows, plan = calls[method](user, q)
            out[method].times.append((time.perf_counter() - started) * 1000)
            out[method].rows.append(rows)
            out[method].plans[plan] += 1
    return out


def quality(engine: Engine, pop: rd.Population, users: list[int], n: int, cfg: Settings,
            exact_cfg: Settings, samples: dict[str, Samples], seed: int) -> None:
    """Share of the exact answer each strategy found, on ``n`` queries (HNSW is approximate)."""
    for i in range(n):
        user = users[i % len(users)]
        q = rd.query_vectors(pop, user, 1, seed * 7919 + i)[0]
        for method, (strategy, overrides) in VARIANTS.items():
            kwargs: dict[str, Any] = {"instance_id": pop.instances[user][0], "scope": "both",
                                      "strategy": strategy, **CALL_KWARGS.get(method, {})}
            got = {m.id for m in recall_by_vector(
                engine, pop.user_ids[user], q, settings=cfg.model_copy(update=overrides),
                **kwargs).memories}
            want = {m.id for m in recall_by_vector(engine, pop.user_ids[user], q,
                                                   settings=exact_cfg, **kwargs).memories}
            samples[method].quality.append(len(got & want) / len(want) if want else 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--heavy", default="10000,15000,20000,30000,50000",
                        help="memories of each heavy user (default %(default)s)")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--queries", type=int, default=300, help="per user group")
    parser.add_argument("--quality-queries", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=400, help="warm-up queries")
    parser.add_argument("--shared-buffers", default="8GB")
    parser.add_argument("--maintenance-work-mem", default="4GB")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the server and its data")
    parser.add_argument("--no-record", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args(argv)
    heavy, params, pop = population(args)
    info = machine()
    cfg = load_settings(embedding_dim=args.dim)
    exact_cfg = load_settings(embedding_dim=args.dim, recall_exact_scan_below=10**9)
    with bench_server(args.data_dir, args.shared_buffers, args.keep) as server_url:
        timings = prepare(server_url, pop, params, args.maintenance_work_mem)
        engine = create_engine(database_url(server_url), pool_size=2)
        with engine.connect() as conn:
            info["postgres"] = conn.execute(text("SHOW server_version")).scalar_one()
            info["shared_buffers"] = conn.execute(text("SHOW shared_buffers")).scalar_one()
            info["pgvector"] = conn.execute(text(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar_one()
        print("clustering the heavy users …", flush=True)
        clustered = cluster_heavy(engine, cfg, [pop.user_ids[u] for u in range(len(heavy))])
        info["warmed_mb"] = warm(engine)
        light = [u for u in range(len(heavy), args.users)]
        random.Random(3).shuffle(light)
        heavy_users = list(range(len(heavy)))
        print("warming up …", flush=True)
        run_queries(engine, pop, heavy_users + light[:200], args.warmup, cfg, seed=99)
        print("measuring …", flush=True)
        busy_before, wall_before = machine_busy(), time.monotonic()
        groups = {"light": run_queries(engine, pop, light, args.queries, cfg, seed=1),
                  "heavy": run_queries(engine, pop, heavy_users, args.queries, cfg, seed=2)}
        info["busy_cores"] = round((machine_busy() - busy_before)
                                   / (time.monotonic() - wall_before), 2)
        info["loadavg"] = os.getloadavg()[0]
        quality(engine, pop, heavy_users, args.quality_queries, cfg, exact_cfg, groups["heavy"],
                seed=5)
        stored = sizes(engine)
        engine.dispose()
        if not args.keep:
            drop_database(server_url)
    light_sizes = sorted(int(c) for c in pop.counts[len(heavy):])
    median_light = light_sizes[len(light_sizes) // 2]
    body = (f"{args.memories:,} memories × {args.dim} dims, {args.users:,} users: heavy "
            f"{', '.join(f'{h:,}' for h in heavy)}; light median {median_light}"
            f", max {light_sizes[-1]}. Load {timings.get('load_s', 0):.0f} s (binary COPY), "
            f"sketch index {timings.get('sketch_index_s', 0):.0f} s, "
            f"HNSW build {timings.get('hnsw_build_s', 0):.0f} s; heap {stored['heap']}, "
            f"HNSW {stored['hnsw']}, sketch index {stored['sketch']}, "
            f"table total {stored['total']}; mirror (memory_sketches with its index) "
            f"{stored['mirror']}{upgraded(timings)}. {clustered_sentence(clustered)} "
            f"Heap and btrees ({info['warmed_mb']:,} MB) read into shared_buffers before "
            f"the warm-up queries. {args.queries} queries per "
            f"group, scope both (profile + one persona), K = {cfg.recall_k} "
            f"(grouped {cfg.recall_per_category_k}/category), "
            f"RECALL_EXACT_SCAN_BELOW {cfg.recall_exact_scan_below}, "
            f"RECALL_CELL_PROBE_SHARE {cfg.recall_cell_probe_share}.\n\n" + table(groups))
    print(body)
    print(f"\nmachine: {info}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(
            {"machine": info, "args": {k: str(v) if isinstance(v, Path) else v
                                       for k, v in vars(args).items()},
             "timings": timings, "sizes": stored,
             "clustered": [r.to_dict() for r in clustered], "groups": summary(groups)},
            indent=2))
    if not args.no_record:
        given = sys.argv[1:] if argv is None else argv
        command = ".venv/bin/python -m bench.recall_bench " + " ".join(given)
        write_results(command.strip(), info, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
