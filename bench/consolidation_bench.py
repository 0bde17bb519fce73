"""Consolidation cost per user, excluding the model's latency: clustering (pure Python) and the
database work (snapshot + near-pair self-join, and the write transaction), and the number of
model calls per user. Plus one finder run over the whole population.

Scenarios (20% of each user's rows are near-duplicates, see bench/consolidation_data.py):

- **heavy**: one user with 1,000 memories, passes repeated until nothing is left to do (the
  per-call cluster budget, CONSOLIDATION_MAX_CLUSTERS, spreads a big backlog over passes);
  reloaded and re-run ``--repeats`` times, medians reported. The HNSW index is in place.
- **population**: 10,000 users × 100 memories (1M rows). The HNSW index is dropped before the
  bulk load (building it for 1M × 512-d rows takes longer than the whole benchmark; a pass does
  not read it — its cost on the write path is in the heavy scenario's write time). Passes run
  for ``--sample`` users (all of them with ``--sample 0``), one after another.

The model is a scripted in-process ChatCompleter answering instantly (every cluster is the
duplicates of a new canonical text, the worst case for the write path: every cluster inserts
a row and needs an embedding); the embedder returns random unit vectors instantly.

    python -m bench.consolidation_bench [--users 10000] [--per-user 100] [--heavy 1000]
                                        [--sample 1000] [--repeats 5] [--no-record]
                                        [--explain] [--json F]

Uses ``EROS_BENCH_DATABASE_URL`` (a superuser URL; a scratch database is created and dropped)
or starts an embedded PostgreSQL with pgvector.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from bench.claim_bench import machine, scratch_database
from bench.consolidation_data import load, user_ids
from eros.core.consolidation_reply import load_consolidation_prompt
from eros.db import finder_sql as sql
from eros.db import schema
from eros.providers.base import Completion, Embeddings, InputType
from eros.providers.offline.heuristic import offline_consolidation_reply
from eros.services.consolidate import ConsolidationReport, Consolidator, consolidate
from eros.settings import load_settings

ROOT = Path(__file__).resolve().parent
PHASES = ("read", "cluster", "write")


class InstantLLM:
    """Answers a consolidation request at once: every cluster merges into a new text."""

    name, offline = "bench-scripted", True

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        self.calls += 1
        reply = json.loads(offline_consolidation_reply(user))
        for item in reply["clusters"]:
            item["canonical"]["content"] += " (consolidated)"
        body = json.dumps(reply)
        return Completion(body, "stop", self.name, len(user) // 4, len(body) // 4)


class InstantEmbedder:
    name, offline = "bench-random", True

    def __init__(self, dim: int) -> None:
        self.dim, self.calls, self._rng = dim, 0, np.random.default_rng(3)

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        self.calls += 1
        vec = self._rng.standard_normal((len(texts), self.dim))
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        return Embeddings(vec.tolist(), len(texts), self.name)


@dataclass
class Stats:
    """Per-user figures of one scenario."""

    users: int = 0
    passes: list[int] = field(default_factory=list)
    llm_calls: list[int] = field(default_factory=list)
    memories: list[int] = field(default_factory=list)
    merged: list[int] = field(default_factory=list)
    share_before: list[float] = field(default_factory=list)
    share_after: list[float] = field(default_factory=list)
    ms: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in (*PHASES,
                                                                                "total")})

    def add_user(self, reports: list[ConsolidationReport]) -> None:
        self.users += 1
        self.passes.append(len(reports))
        self.llm_calls.append(sum(r.llm_calls for r in reports))
        self.memories.append(reports[0].memories)
        self.merged.append(sum(r.merged for r in reports))
        self.share_before.append(reports[0].share_before)
        self.share_after.append(reports[-1].share_after or 0.0)
        for phase in PHASES:  # the first pass: the one that does the work
            self.ms[phase].append(reports[0].timings.get(phase, 0.0))
        self.ms["total"].append(sum(reports[0].timings.get(p, 0.0) for p in PHASES))

    def summary(self) -> dict[str, Any]:
        def med(xs: Sequence[float]) -> float:
            return round(statistics.median(xs), 3) if xs else 0.0

        def p95(xs: Sequence[float]) -> float:  # nearest rank
            return round(sorted(xs)[max(0, math.ceil(0.95 * len(xs)) - 1)], 3) if xs else 0.0

        return {"users": self.users, "memories_median": med(self.memories),
                "passes_median": med(self.passes), "passes_max": max(self.passes, default=0),
                "llm_calls_per_user_median": med(self.llm_calls),
                "llm_calls_per_user_max": max(self.llm_calls, default=0),
                "merged_median": med(self.merged), "share_before_median": med(self.share_before),
                "share_after_median": med(self.share_after),
                "ms_median": {p: med(v) for p, v in self.ms.items()},
                "ms_p95": {p: p95(v) for p, v in self.ms.items()}}


def until_done(c: Consolidator, user: uuid.UUID, max_passes: int = 20) -> list[ConsolidationReport]:
    reports = [consolidate(c, user)]
    while reports[-1].clusters_deferred and len(reports) < max_passes:
        reports.append(consolidate(c, user))
    return reports


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


#: empties every table of the schema, so one a later migration adds is emptied too (0008's
#: ``memory_sketches`` once broke a hand-written list); CASCADE covers any referencing table
#: the metadata does not know.
RESET = text("TRUNCATE " + ", ".join(t.fullname for t in schema.metadata.sorted_tables)
             + " CASCADE")


def _reset(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(RESET)


def heavy(engine: Engine, url: str, c: Consolidator, size: int, repeats: int) -> Stats:
    stats = Stats()
    for r in range(repeats):
        _reset(engine)
        user = uuid.uuid4()
        load(_conninfo(url), [user], size, seed=100 + r)
        with engine.begin() as conn:
            conn.execute(text("ANALYZE engine.companion_memories"))
        stats.add_user(until_done(c, user))
    return stats


def finder_ms(engine: Engine, c: Consolidator, scan_limit: int, repeats: int = 3) -> float:
    """One finder query (measure + choose), rolled back so every repeat sees the same state."""
    times = []
    for _ in range(repeats):
        with engine.connect() as conn, conn.begin() as tx:
            start = time.perf_counter()
            sql.find_candidates(conn, similarity=c.settings.consolidation_similarity,
                                stale_secs=600, max_attempts=5, scan_limit=scan_limit)
            times.append((time.perf_counter() - start) * 1000)
            tx.rollback()
    return round(statistics.median(times), 1)


def population(engine: Engine, url: str, c: Consolidator, users: int, per_user: int,
               sample: int, explain: bool = False) -> tuple[Stats, dict[str, Any]]:
    _reset(engine)
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX IF EXISTS engine.ix_companion_memories_embedding_hnsw"))
    ids = user_ids(users, seed=23)
    started = time.monotonic()
    rows = load(_conninfo(url), ids, per_user)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE engine.companion_memories"))
    extra: dict[str, Any] = {"rows": rows, "load_secs": round(time.monotonic() - started, 1)}
    if explain:
        with engine.connect() as conn, conn.begin() as tx:
            plan = conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + str(sql.FIND_CANDIDATES)),
                                {"max_distance": 0.15, "stale_secs": 600, "max_attempts": 5,
                                 "scan_limit": 500}).scalars()
            print("\n".join(plan), flush=True)
            tx.rollback()
    extra["finder_ms_scan_500"] = finder_ms(engine, c, 500)
    extra["finder_ms_scan_all"] = finder_ms(engine, c, users, repeats=1)
    stats = Stats()
    chosen = ids if sample <= 0 else ids[:sample]
    started = time.monotonic()
    for user in chosen:
        stats.add_user(until_done(c, user))
    extra["passes_wall_secs"] = round(time.monotonic() - started, 1)
    return stats, extra


def table(results: dict[str, dict[str, Any]]) -> str:
    """Medians per user (first pass for the timings), p95 of the total."""
    head = (f"{'scenario':<24}{'users':>6}{'mem/user':>9}{'read ms':>9}{'cluster ms':>11}"
            f"{'write ms':>9}{'total ms':>9}{'p95 ms':>8}{'LLM calls/user':>16}"
            f"{'passes':>7}  {'near-dup share':<14}")
    lines = [head, "-" * len(head)]
    for name, s in results.items():
        m = s["ms_median"]
        calls = f"{s['llm_calls_per_user_median']:.0f} (max {s['llm_calls_per_user_max']})"
        share = f"{s['share_before_median']:.2f} -> {s['share_after_median']:.2f}"
        lines.append(f"{name:<24}{s['users']:>6}{s['memories_median']:>9.0f}{m['read']:>9.1f}"
                     f"{m['cluster']:>11.1f}{m['write']:>9.1f}{m['total']:>9.1f}"
                     f"{s['ms_p95']['total']:>8.1f}{calls:>16}{s['passes_median']:>7.0f}"
                     f"  {share:<14}")
    return "\n".join(lines)


def record(text_table: str, extra: dict[str, Any], info: dict[str, Any], command: str) -> None:
    """Append under ``## Consolidation`` in bench/RESULTS.md (other sections belong to others)."""
    path = ROOT / "RESULTS.md"
    section = (f"\n## Consolidation\n\n`{command}`\n\nMachine: {info['nproc']} cores, "
               f"{info['cpu']}, {info['ram_gib']} GiB RAM, PostgreSQL {info['postgres']} "
               f"(shared_buffers {info['shared_buffers']}).\n\n```\n{text_table}\n```\n\n"
               f"Population load: {extra['rows']:,} rows in {extra['load_secs']} s (binary "
               f"COPY, HNSW dropped). One finder query over it: {extra['finder_ms_scan_500']} ms"
               f" measuring 500 users (the default CONSOLIDATION_SCAN_LIMIT), "
               f"{extra['finder_ms_scan_all']} ms measuring all {info['population_users']:,}."
               f" Passes for the sampled users took {extra['passes_wall_secs']} s of wall time.\n")
    exists = path.exists() and path.stat().st_size > 0
    with path.open("a", encoding="utf-8") as fh:
        if not exists:
            fh.write("# Benchmark results\n")
        fh.write(section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.consolidation_bench",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=10000)
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--heavy", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=1000, help="0 = every user")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-record", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--explain", action="store_true", help="print the finder's plan")
    parser.add_argument("--json", type=Path, default=ROOT / "out" / "consolidation.json",
                        help="where the results go (default %(default)s)")
    args = parser.parse_args(argv)
    info = machine()
    with scratch_database() as url:
        engine = create_engine(url, pool_size=2)
        try:
            with engine.connect() as conn:
                info["postgres"] = conn.execute(text("SHOW server_version")).scalar_one()
                info["shared_buffers"] = conn.execute(text("SHOW shared_buffers")).scalar_one()
            settings = load_settings(database_url=url)
            c = Consolidator(settings, engine, InstantLLM(), InstantEmbedder(512),
                             load_consolidation_prompt())
            results: dict[str, Any] = {}
            results["heavy"] = heavy(engine, url, c, args.heavy, args.repeats).summary()
            print("  heavy user done", flush=True)
            pop, extra = population(engine, url, c, args.users, args.per_user, args.sample,
                                    args.explain)
            results["population"] = pop.summary()
            results["extra"] = extra
        finally:
            engine.dispose()
    info["population_users"] = args.users
    shown = {f"1 user × {args.heavy}": results["heavy"],
             f"{pop.users} of {args.users} × {args.per_user}": results["population"]}
    out = table(shown)
    print(out)
    print(json.dumps(results["extra"]))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": info, "args": vars(args), "results": results},
                                    indent=2, default=str))
    if not args.no_record:
        cmd = "python -m bench.consolidation_bench " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
            if k not in ("no_record", "explain", "json"))
        record(out, results["extra"], info, cmd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
