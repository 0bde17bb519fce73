"""Consolidation at scale (issue 17): one user with 1k, 10k and 50k memories (20% written as
near-duplicates, see bench/consolidation_data.py), the incremental path against the all-pairs
path of before in the same run. The model's latency is excluded: the model is a scripted
in-process ChatCompleter answering instantly (every cluster merges into a new canonical text,
the worst case for the write path), the embedder returns random unit vectors instantly.

Per size, on a fresh table holding that user (HNSW index built after the load):

- **all-pairs (old)**: the snapshot and the per-category self-join (``NEAR_PAIRS``) the pass
  ran before, in one REPEATABLE READ transaction, plus clustering all the user's memories —
  the read side of the old pass (its write transaction is not included: it is the same write
  as the new path's). Run once per size (``--old-max`` caps the size it runs at).
- **pairs found**: the new path's near pairs (exact up to CONSOLIDATION_EXACT_BELOW; above
  it, for a user cut into recall cells — every size from RECALL_CELL_MIN_ROWS, clustered after
  the load as beat would — the sketch prefilter within each memory's
  CONSOLIDATION_CELL_PROBES nearest cells then the exact check; without cells the sketch
  prefilter over the layer and category up to CONSOLIDATION_HNSW_ABOVE, HNSW's k nearest
  above) against the exact all-pairs set; above ``--full-max`` (marked *) the pairs
  ``--sample`` random memories find from their own searches against their exact pairs.
- **first pass**: passes until no memory is left uncompared (the backlog is worked through in
  chunks of at most CONSOLIDATION_CHUNK_SIZE; CONSOLIDATION_MAX_CLUSTERS is raised to 500 so a
  pass is bounded by the chunk, not by the per-call cluster budget). Database work = the sum of
  every pass's read and write transactions; the longest single transaction is reported too.
- **bulk first pass** (issue 34): the same first pass on a copy of the database taken just
  before it, through ``eros.consolidation.services.consolidation_bulk.first_pass`` (the neighbours
  of every
  memory read at once when the backlog is due for it, ``(not due)`` otherwise), always over the
  whole backlog; where today's first pass ran whole too, ``same`` says whether both ended with
  the same memories merged or superseded into the same results.
- **incremental**: 20 new memories (4 restating existing ones), then one pass; and the old path
  over the same user for comparison (its cost does not shrink: it re-reads every pair).
- **finder**: one finder query with the whole user uncompared, and with only the 20 new.

    python -m bench.consolidation_bench [--sizes 1000,10000,50000] [--old-max 50000]
                                        [--full-max 50000] [--sample 1000]
                                        [--no-record] [--json F]

Uses ``EROS_BENCH_DATABASE_URL`` (a superuser URL; a scratch database is created and dropped)
or starts an embedded PostgreSQL with pgvector.
"""

from __future__ import annotations

# eros first (before numpy loads OpenBLAS): one BLAS thread a process, as in a worker
# (eros/__init__.py); imported after numpy, the bench ran two spinning BLAS threads, which a
# loaded machine made ~30x slower on the bulk search's small products than the worker's one
# isort: off
import eros  # noqa: F401
# isort: on
import argparse
import json
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from bench.claim_bench import machine, scratch_database
from bench.consolidation_bulk_run import copy_of, decisions, run_bulk
from bench.consolidation_data import EMBEDDING_MODEL, add_new, load
from bench.consolidation_table import FIRST_PASS_BOUND_MS, bound_line, record, table
from eros.consolidation.core.consolidation import Pair, cluster
from eros.consolidation.core.consolidation_reply import load_consolidation_prompt
from eros.consolidation.db import consolidation_sql as sql
from eros.consolidation.db import finder_sql
from eros.consolidation.services.consolidate import Consolidator, consolidate
from eros.consolidation.services.consolidation_read import PAGE, choose_search, search_pairs
from eros.consolidation.services.consolidation_report import ConsolidationReport
from eros.db import hnsw_index, schema
from eros.guard.services.guard_training import ensure_model
from eros.providers.base import Completion, Embeddings, InputType
from eros.providers.offline.heuristic import offline_consolidation_reply
from eros.recall.services import recall_cells
from eros.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parent
PHASES = ("read", "cluster", "write")
DIM = 512


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
    name, offline = EMBEDDING_MODEL, True

    def __init__(self, dim: int) -> None:
        self.dim, self.calls, self._rng = dim, 0, np.random.default_rng(3)

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        self.calls += 1
        vec = self._rng.standard_normal((len(texts), self.dim))
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        return Embeddings(vec.tolist(), len(texts), self.name)


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


#: empties every table of the schema, so one a later migration adds is emptied too (0008's
#: ``memory_sketches`` once broke a hand-written list); CASCADE covers any referencing table
#: the metadata does not know.
RESET = text("TRUNCATE " + ", ".join(t.fullname for t in schema.metadata.sorted_tables)
             + " CASCADE")
HNSW = "engine.ix_companion_memories_embedding_hnsw"


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 1)


def _fresh_user(engine: Engine, url: str, size: int, seed: int,
                s: Settings) -> tuple[uuid.UUID, float]:
    """Empty tables, load one user without the HNSW index, then build it where the settings
    read it (as `eros migrate` does: RECALL_QUANTIZED_SCAN=false or CONSOLIDATION_HNSW_ABOVE;
    the pass pays for it on writes); returns the user and the seconds the build took."""
    with engine.begin() as conn:
        conn.execute(RESET)
        conn.execute(text(f"DROP INDEX IF EXISTS {HNSW}"))
    user = uuid.UUID(int=seed, version=4)
    load(_conninfo(url), [user], size, seed=seed)
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("SET maintenance_work_mem = '512MB'"))
        if hnsw_index.wanted(s):
            conn.execute(text(schema.hnsw_index_sql()))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE engine.companion_memories"))
    return user, round(time.perf_counter() - started, 1)


def old_path(engine: Engine, s: Settings, user: uuid.UUID) -> dict[str, Any]:
    """The read side of the pass before issue 17: snapshot + all-pairs self-join, then
    clustering every current memory."""
    started = time.perf_counter()
    with engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        memories = sql.read_snapshot(conn, user)
        pairs = sql.near_pairs(conn, user, similarity=s.consolidation_similarity)
    read_ms = _ms(started)
    started = time.perf_counter()
    cluster(memories, pairs, max_size=s.consolidation_max_cluster_size)
    return {"read_ms": read_ms, "cluster_ms": _ms(started), "pairs": pairs}


def new_pairs(engine: Engine, s: Settings, user: uuid.UUID) -> tuple[set[Pair], float]:
    """The pairs the incremental path finds when every memory is new, searched as a pass
    searches (same plan choice, same pages), read-only."""
    started = time.perf_counter()
    found: set[Pair] = set()
    with engine.connect() as conn, conn.begin():
        search = choose_search(conn, user, s)
        ids = [r.id for r in conn.execute(text(
            "SELECT id FROM engine.companion_memories WHERE user_id = :u"
            " AND status = 'current' ORDER BY created_at, id"), {"u": user})]
        for i in range(0, len(ids), PAGE):
            found.update(search_pairs(conn, user, ids[i:i + PAGE], s, search=search))
    return found, _ms(started)


def sample_recall(engine: Engine, s: Settings, user: uuid.UUID, n: int,
                  seed: int) -> dict[str, Any]:
    """Pairs found by ``n`` random memories' own searches (the pass's plan) of the exact
    pairs those memories have — conservative: a full pass also finds a pair from its other
    end."""
    with engine.connect() as conn, conn.begin():
        ids = list(conn.execute(text(
            "SELECT id FROM engine.companion_memories WHERE user_id = :u AND status ="
            " 'current' ORDER BY md5(id::text || :seed) LIMIT :n"),
            {"u": user, "seed": str(seed), "n": n}).scalars())
        exact = _norm(sql.exact_pairs(conn, user, ids, similarity=s.consolidation_similarity))
        search = choose_search(conn, user, s)
        found: set[Pair] = set()
        for i in range(0, len(ids), PAGE):
            found.update(search_pairs(conn, user, ids[i:i + PAGE], s, search=search))
    return {"exact_pairs": len(exact), "found_pairs": len(_norm(list(found)) & exact),
            "pairs_recall": round(len(_norm(list(found)) & exact) / len(exact), 5)
            if exact else 1.0, "pairs_sample": n}


def _norm(pairs: Sequence[Pair]) -> set[Pair]:
    return {(a, b) if str(a) < str(b) else (b, a) for a, b in pairs}


def _db_ms(r: ConsolidationReport) -> float:
    return r.timings.get("read", 0.0) + r.timings.get("write", 0.0)


def finder_ms(engine: Engine, s: Settings) -> float:
    """One finder query (measure + choose), rolled back."""
    with engine.connect() as conn, conn.begin() as tx:
        started = time.perf_counter()
        finder_sql.find_candidates(conn, similarity=s.consolidation_similarity,
                                   stale_secs=600, max_attempts=5, scan_limit=500,
                                   sample=s.consolidation_finder_sample)
        took = _ms(started)
        tx.rollback()
    return took


def first_pass(c: Consolidator, user: uuid.UUID, max_passes: int = 10000
               ) -> list[ConsolidationReport]:
    """Passes until nothing is left uncompared (what the task's re-enqueueing does)."""
    reports = [consolidate(c, user)]
    while reports[-1].backlog and reports[-1].compared and len(reports) < max_passes:
        reports.append(consolidate(c, user))
    return reports


def scenario(engine: Engine, url: str, c: Consolidator, size: int, *, old: bool, full: bool,
             seed: int, sample: int = 1000, whole: bool = False) -> dict[str, Any]:
    """One user of ``size`` memories. ``full``: the whole first pass (and the pairs-found
    check); otherwise only its first chunk is run and the rest of the user is stamped compared
    directly, so the incremental pass still meets a user with no backlog."""
    s = c.settings
    user, build_secs = _fresh_user(engine, url, size, seed, s)
    # what `eros migrate` does on a deploy: the guard's meaning model for the embedder, made
    # ahead of the passes (without it the passes hold every canonical text back, unscreened)
    ensure_model(c.settings, engine, c.embedder)
    whole = whole or full  # today's first pass over the whole backlog, not one chunk
    out: dict[str, Any] = {"size": size, "hnsw_build_secs": build_secs, "full": whole,
                           "pairs_checked": full}
    if size >= s.recall_cell_min_rows:  # a heavy user is cut into recall cells, as beat does
        clustered = recall_cells.cluster_user(engine, s, user)
        out["cells"], out["cluster_ms"] = clustered.cells, round(
            clustered.read_ms + clustered.cluster_ms + clustered.write_ms, 1)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE engine.memory_sketches"))
    exact: set[Pair] = set()
    if old:  # its pairs are the exact all-pairs set
        before = old_path(engine, s, user)
        out["old_read_ms"], out["old_cluster_ms"] = before["read_ms"], before["cluster_ms"]
        exact = _norm(before["pairs"])
    if full:
        if not old:
            with engine.connect() as conn:
                exact = _norm(sql.near_pairs(conn, user,
                                             similarity=s.consolidation_similarity))
        found, out["new_pairs_ms"] = new_pairs(engine, s, user)
        out["exact_pairs"], out["found_pairs"] = len(exact), len(found & exact)
        out["pairs_recall"] = round(len(found & exact) / len(exact), 5) if exact else 1.0
    else:  # pairs found from a sample's own searches against the exact pairs of the sample
        out.update(sample_recall(engine, s, user, sample, seed))
    out["finder_backlog_all_ms"] = finder_ms(engine, s)
    with copy_of(engine, url) as copy:  # the bulk first pass on a copy of this state
        reports = first_pass(c, user) if whole else [consolidate(c, user)]
        out["bulk"], made = run_bulk(copy, c, user)
        if whole:  # both ran the whole backlog: the same decisions?
            out["bulk"]["same_decisions"] = made == decisions(engine, user)
    compared = sum(r.compared for r in reports)
    db_ms = sum(_db_ms(r) for r in reports)
    out["first"] = {"passes": len(reports), "compared": compared,
                    "search": reports[0].search, "merged": sum(r.merged for r in reports),
                    "db_ms": round(db_ms, 1),
                    "read_ms": round(sum(r.timings.get("read", 0.0) for r in reports), 1),
                    "write_ms": round(sum(r.timings.get("write", 0.0) for r in reports), 1),
                    # a chunk only: the whole backlog at the same rate per memory compared
                    "db_ms_whole": round(db_ms * (size / compared if not whole and compared
                                                  else 1.0), 1),
                    "max_txn_ms": max(max(r.timings.get("read", 0.0),
                                          r.timings.get("write", 0.0)) for r in reports),
                    "cluster_ms": round(sum(r.timings.get("cluster", 0.0) for r in reports), 1),
                    "llm_calls": sum(r.llm_calls for r in reports),
                    "left": reports[-1].backlog}
    if not whole:
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM engine.consolidation_backlog WHERE user_id = :u"),
                         {"u": user})
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        # what autovacuum does between passes (status changes cleared the visibility map,
        # which the sketch scan, an index-only scan, needs)
        conn.execute(text("VACUUM ANALYZE engine.companion_memories"))
    add_new(_conninfo(url), user, 20, 4, DIM, seed=seed + 1)
    out["finder_backlog_20_ms"] = finder_ms(engine, s)
    inc = consolidate(c, user)
    out["incremental"] = {"compared": inc.compared, "memories": inc.memories,
                          "merged": inc.merged, "read_ms": inc.timings.get("read", 0.0),
                          "write_ms": inc.timings.get("write", 0.0), "db_ms": _db_ms(inc),
                          "search": inc.search}
    if old:
        after = old_path(engine, s, user)
        out["old_incremental_read_ms"] = after["read_ms"]
        out["old_incremental_cluster_ms"] = after["cluster_ms"]
    return out


def bench_settings(url: str, cells_from: int | None = None) -> Settings:
    """``cells_from``: cut users into recall cells from this size (and search them through
    the cells above it) instead of RECALL_CELL_MIN_ROWS — a small user on the bulk path."""
    small = {} if cells_from is None else {"recall_cell_min_rows": cells_from,
                                           "consolidation_exact_below": cells_from - 1}
    return load_settings(database_url=url, consolidation_max_clusters=500, **small)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.consolidation_bench",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,50000",
                        help="memories of the one user, per scenario (comma-separated)")
    parser.add_argument("--old-max", type=int, default=50000,
                        help="run the all-pairs path only up to this size")
    parser.add_argument("--full-max", type=int, default=50000,
                        help="run the whole first pass (and the pairs-found check) only up to"
                        " this size; above it one chunk, extrapolated")
    parser.add_argument("--whole-max", type=int, default=0,
                        help="run today's whole first pass (every chunk) and compare its"
                        " decisions with the bulk pass's up to this size, without the"
                        " pairs-found check of --full-max")
    parser.add_argument("--sample", type=int, default=1000,
                        help="memories whose pairs are checked above --full-max")
    parser.add_argument("--cells-from", type=int, default=None,
                        help="cut users into recall cells from this size (default"
                        " RECALL_CELL_MIN_ROWS): the bulk first pass on a small user")
    parser.add_argument("--no-record", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--json", type=Path, default=ROOT / "out" / "consolidation.json",
                        help="where the results go (default %(default)s)")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    info = machine()
    rows = []
    with scratch_database() as url:
        engine = create_engine(url, pool_size=2)
        try:
            with engine.connect() as conn:
                info["postgres"] = conn.execute(text("SHOW server_version")).scalar_one()
                info["shared_buffers"] = conn.execute(text("SHOW shared_buffers")).scalar_one()
            c = Consolidator(bench_settings(url, args.cells_from), engine, InstantLLM(),
                             InstantEmbedder(DIM), load_consolidation_prompt())
            for n, size in enumerate(sizes):
                rows.append(scenario(engine, url, c, size, old=size <= args.old_max,
                                     full=size <= args.full_max, seed=1000 + n,
                                     whole=size <= args.whole_max,
                                     sample=args.sample))
                print(f"  {size} done", flush=True)
        finally:
            engine.dispose()
    for r in rows:  # issue 34 item 4: the first pass as a ratio to its bound
        r["bulk"]["bound_ratio"] = round(r["bulk"]["db_ms"] / FIRST_PASS_BOUND_MS, 3)
    out = table(rows) + "\n" + bound_line(rows)
    print(out)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": info, "args": vars(args), "results": rows},
                                    indent=2, default=str))
    if not args.no_record:
        cmd = (f"python -m bench.consolidation_bench --sizes {args.sizes} --old-max"
               f" {args.old_max} --full-max {args.full_max} --whole-max {args.whole_max}"
               f" --sample {args.sample}")
        record(out, info, cmd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
