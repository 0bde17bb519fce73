"""CPU per classified session, worker and PostgreSQL, on the classify path alone.

Why it matters (issue 17): on a 2-core box the drain is CPU-bound before it is latency-bound;
every millisecond of CPU a session costs caps throughput. The drain benchmark measures the whole
system (Celery, beat, fakes); this one runs only what a classify task runs — ``start_attempt``
then ``classify`` — in this process, for N claimed sessions, against the fake OpenRouter and
Voyage servers (separate processes, no latency) and an embedded PostgreSQL, and reports:

- worker CPU ms per session (this process, ``time.process_time``),
- PostgreSQL CPU ms per session (the postmaster's tree from /proc, as the drain bench counts it),
- statements and transactions per session (SQLAlchemy's cursor executes, commits and
  rollbacks, not counting an AUTOCOMMIT connection's, which send nothing) and pool pings
  per session (pre-ping's, one per checkout; the idle ping of ``make_engine`` never fires in
  a continuous run, its connections idle for milliseconds).

Each session has three user turns, each extracted as one memory; since issue 31 the classify
path also indexes the three turns (embedded in the candidates' request, screened, labelled and
written with the memories): ``turns ok`` says every session's turns were indexed.

Variants run IN THE SAME RUN, each on its own clone seeded alike:

- ``pre-ping``: the engine with ``pool_pre_ping=True`` (what every checkout paid before);
- ``ours``: the engine ``eros.db.engine.make_engine`` builds, on a database migrated with the
  default settings: no HNSW index (0031; no default plan reads it);
- ``hnsw``: ``ours`` with the memories' HNSW index built, what `eros migrate` keeps for
  RECALL_QUANTIZED_SCAN=false (and what every database had before 0031): each memory written
  is inserted into the graph.

    python -m bench.classify_cpu_bench [--sessions 500] [--rounds 2] [--profile FILE]
        [--variants pre-ping,ours,hnsw] [--json FILE]

``--profile`` writes a cProfile of the ``ours`` variant (``python -m pstats FILE``).
``EROS_BENCH_DATABASE_URL`` (a superuser URL) points at an existing server instead of the
embedded PostgreSQL (its CPU is then counted only when its data directory is readable here).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, text

from bench.claim_bench import machine
from bench.drain_run import MEMORIES_PER_SESSION, SEED_MESSAGES, SEED_SESSIONS
from bench.drain_support import FakeServer, postmaster_pid, tree_cpu
from eros.db.engine import make_engine
from eros.db.schema import hnsw_index_sql
from eros.dreaming.services.classify import Pipeline, classify, start_attempt
from eros.memory.db import repo
from eros.prompts import load_prompt
from eros.providers.embeddings import VoyageEmbedder
from eros.providers.llm import OpenRouterChat
from eros.settings import load_settings
from testkit.guard import seed_template
from testkit.services import TemplateDatabases, postgres_server


@dataclass
class Measured:
    label: str
    sessions: int
    worker_ms: float
    postgres_ms: float
    statements: float
    transactions: float
    pings: float
    memories: int
    #: rows of engine.memory_turns after the run (the user's turns classify indexed)
    turns: int = 0

    @property
    def total_ms(self) -> float:
        return self.worker_ms + self.postgres_ms


class Counter:
    """What an engine sends, from SQLAlchemy's events (no patching): statements, transaction
    ends (each one BEGIN and one COMMIT or ROLLBACK on the wire) and pool checkouts (each one
    ping when pre-ping is on)."""

    def __init__(self, engine: Engine) -> None:
        self.statements = self.ends = self.checkouts = 0
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._end)
        event.listen(engine, "rollback", self._end)
        event.listen(engine.pool, "checkout", self._checkout)

    def _statement(self, *_: object) -> None:
        self.statements += 1

    def _end(self, conn: Connection) -> None:
        # an AUTOCOMMIT connection (the attempt's statement) sends no COMMIT or ROLLBACK
        driver = conn.connection.driver_connection
        assert driver is not None
        if not driver.autocommit:
            self.ends += 1

    def _checkout(self, *_: object) -> None:
        self.checkouts += 1


def _pipeline(engine: Engine, db_url: str, llm: FakeServer, voyage: FakeServer) -> Pipeline:
    settings = load_settings(
        database_url=db_url, openrouter_api_key="k", openrouter_base_url=llm.url,
        voyage_api_key="k", voyage_base_url=voyage.url, provider_max_retries=0,
        llm_timeout_secs=10, embedding_timeout_secs=10, embedding_dim=512)
    return Pipeline(settings, engine, OpenRouterChat(settings), VoyageEmbedder(settings),
                    load_prompt())


def run_variant(label: str, templates: TemplateDatabases, llm: FakeServer, voyage: FakeServer,
                sessions: int, *, pre_ping: bool | None, hnsw: bool = False,
                profile: Path | None = None) -> Measured:
    """Seed, claim (not measured), then classify every claim in this process (measured)."""
    db_url = templates.clone()
    admin = create_engine(db_url, pool_size=1)
    with admin.begin() as conn:
        if hnsw:
            conn.execute(text(hnsw_index_sql()))
        conn.execute(SEED_SESSIONS, {"n": sessions})
        conn.execute(SEED_MESSAGES)
        conn.execute(text("ANALYZE"))
        claims = repo.claim_idle(conn, idle_secs=60, stale_secs=600, batch=sessions)
    engine = make_engine(db_url)
    if pre_ping is not None:
        engine.pool._pre_ping = pre_ping
    engine_pre_ping = bool(engine.pool._pre_ping)
    pipeline = _pipeline(engine, db_url, llm, voyage)
    # warm up: connections, prepared statements, the SDKs' first request
    warm, claims = claims[:5], claims[5:]
    for claim in warm:
        attempt = start_attempt(pipeline, claim.session_id, claim.token)
        assert attempt is not None
        classify(pipeline, attempt)
    counter = Counter(engine)
    pg = postmaster_pid(_data_directory(admin))
    pg_before, cpu_before = tree_cpu(pg), time.process_time()
    profiler = cProfile.Profile(time.process_time) if profile else None
    with profiler or nullcontext():
        for claim in claims:
            attempt = start_attempt(pipeline, claim.session_id, claim.token)
            assert attempt is not None
            report = classify(pipeline, attempt)
            assert report.outcome == "memories", report.outcome
    worker = time.process_time() - cpu_before
    postgres = tree_cpu(pg) - pg_before
    if profiler and profile:
        profiler.dump_stats(profile)
    with admin.connect() as conn:
        memories = int(conn.execute(text(
            "SELECT count(*) FROM engine.companion_memories")).scalar_one())
        turns = int(conn.execute(text("SELECT count(*) FROM engine.memory_turns")).scalar_one())
    engine.dispose()
    admin.dispose()
    templates.drop(db_url)
    n = len(claims)
    pings = counter.checkouts if engine_pre_ping else 0
    return Measured(label, n, 1000 * worker / n, 1000 * postgres / n, counter.statements / n,
                    counter.ends / n, pings / n, memories, turns)


def _data_directory(engine: Engine) -> str:
    with engine.connect() as conn:
        return str(conn.execute(text("SHOW data_directory")).scalar_one())


@contextmanager
def _servers(log_dir: Path) -> Iterator[tuple[FakeServer, FakeServer]]:
    llm = FakeServer("llm_server", 0.0, log_dir)
    voyage = FakeServer("voyage_server", 0.0, log_dir)
    try:
        llm.wait_ready()
        voyage.wait_ready()
        yield llm, voyage
    finally:
        llm.stop()
        voyage.stop()


def report(results: list[list[Measured]]) -> str:
    """Median over rounds per variant, with the spread (min–max) of the total."""
    lines = [f"{'variant':<10} {'worker ms':>9} {'pg ms':>7} {'total ms':>8} {'range':>13} "
             f"{'stmts':>6} {'xacts':>6} {'pings':>6} {'memories ok':>11} {'turns ok':>8}"]
    for label in dict.fromkeys(m.label for r in results for m in r):
        runs = [m for r in results for m in r if m.label == label]
        totals = [m.total_ms for m in runs]
        ok = all(m.memories == (m.sessions + 5) * MEMORIES_PER_SESSION for m in runs)
        # three user turns a session, every one indexed
        turns_ok = all(m.turns == (m.sessions + 5) * MEMORIES_PER_SESSION for m in runs)
        lines.append(
            f"{label:<10} {statistics.median(m.worker_ms for m in runs):>9.2f} "
            f"{statistics.median(m.postgres_ms for m in runs):>7.2f} "
            f"{statistics.median(totals):>8.2f} {min(totals):>6.2f}–{max(totals):<6.2f} "
            f"{statistics.median(m.statements for m in runs):>6.2f} "
            f"{statistics.median(m.transactions for m in runs):>6.2f} "
            f"{statistics.median(m.pings for m in runs):>6.2f} {ok!s:>11} {turns_ok!s:>8}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.classify_cpu_bench",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2, help="variants alternate per round")
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    parser.add_argument("--variants", default="pre-ping,ours,hnsw",
                        help="comma-separated, run in this order every round")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if not variants or set(variants) - {"pre-ping", "ours", "hnsw"}:
        parser.error("--variants: pre-ping, ours and/or hnsw")
    pg_given = os.environ.get("EROS_BENCH_DATABASE_URL")
    log_dir = Path(tempfile.mkdtemp(prefix="eros-classify-cpu-"))
    results: list[list[Measured]] = []
    with (nullcontext(pg_given) if pg_given else postgres_server()) as pg, _servers(log_dir) \
            as (llm, voyage):
        templates = TemplateDatabases(pg.replace("postgresql://", "postgresql+psycopg://", 1),
                                      seed=lambda url: seed_template(url, None))
        try:
            for i in range(args.rounds):
                results.append([
                    run_variant(label, templates, llm, voyage, args.sessions + 5,
                                pre_ping=True if label == "pre-ping" else None,
                                hnsw=label == "hnsw",
                                profile=args.profile if label == "ours"
                                and i == args.rounds - 1 else None)
                    for label in variants])
        finally:
            templates.close()
    print(f"machine: {machine()}")
    print(f"{args.sessions} sessions per variant, {args.rounds} rounds, "
          f"{MEMORIES_PER_SESSION} memories per session, fakes without latency")
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(
            {"machine": machine(), "sessions": args.sessions,
             "runs": [[{**asdict(m), "total_ms": m.total_ms} for m in r] for r in results]},
            indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
