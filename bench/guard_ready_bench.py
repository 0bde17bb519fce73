"""A cold fleet on a fresh database with the guard's meaning layer on (issue 30).

Live-shaped providers (the fake OpenRouter and Voyage servers in their own processes, through
the real SDKs), a fresh database WITHOUT the meaning model for the live embedder (what a new
deployment has before its first worker), ``--workers`` worker processes started at the same
moment (the Procfile's worker command: ``celery -A eros.worker worker --pool=prefork``), then
beat and a claim worker; every session has three candidates. Measured in the same run:

- the drain with the layer on (the fleet trains the model once at start-up: one worker under
  the advisory lock, the others go on) against the same drain with the layer off — the ratio;
- embedding calls: at start-up (the training, once for the fleet) and per session during the
  drain (the contract: one per session with candidates), memories left ``unscreened``;
- with the offline e5 embedder, the model's first availability on a fresh database: embedding
  calls (none: it ships in the package) and the milliseconds it takes.

Not measured here: restarts of Redis/PostgreSQL and a SIGKILL mid-drain, and a busy machine:
bench/cold_fleet_bench.py runs the same comparison through them.

Run: ``.venv/bin/python -m bench.guard_ready_bench --sessions 200 --workers 3``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from sqlalchemy import create_engine, text

from bench.drain_run import environment, run_ours
from testkit.services import TemplateDatabases, with_database


def _cold(server_url: str) -> Callable[[str], None]:
    """``on_database``: the clone loses the model the test template carries (a fresh
    deployment's database)."""
    def hook(name: str) -> None:
        engine = create_engine(with_database(server_url, name), pool_size=1)
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM engine.guard_classifiers"))
        engine.dispose()
    return hook


def _unscreened(server_url: str, name: list[str]) -> int:
    engine = create_engine(with_database(server_url, name[0]), pool_size=1)
    with engine.connect() as conn:
        count = int(conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                      " WHERE status <> 'current'")).scalar_one())
    engine.dispose()
    return count


def e5_first_availability(templates: TemplateDatabases) -> tuple[int, float]:
    """Embedding calls and milliseconds until the layer is ready with e5 on a fresh database
    (a clone of the run's template without its trained models)."""
    from eros.guard.services.guard_model import forget_models, meaning_layer
    from eros.providers.base import Embeddings, InputType
    from eros.providers.offline.e5 import E5Embedder
    from eros.settings import load_settings

    class Counting(E5Embedder):
        calls = 0

        def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
            Counting.calls += 1
            return super().embed(texts, input_type=input_type)

    url = templates.clone()
    engine = create_engine(url, pool_size=1)
    try:
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM engine.guard_classifiers"))
        forget_models()
        started = time.perf_counter()
        layer = meaning_layer(load_settings(database_url=url, embedding_dim=512), engine,
                              Counting(512))
        ms = (time.perf_counter() - started) * 1000
        assert layer.state == "ready", layer.state
    finally:
        engine.dispose()
        templates.drop(url)
    return Counting.calls, ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.guard_ready_bench",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--llm-ms", type=float, default=300.0)
    parser.add_argument("--embed-ms", type=float, default=30.0)
    parser.add_argument("--log-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    args.pool, args.batch, args.db_pool, args.metrics, args.timeout = "prefork", 100, 0, False, None
    rows = []
    with environment(args) as (templates, redis_url, llm, voyage, log_dir):
        for label, extra in (("layer on, no model yet (cold fleet)", {}),
                             ("layer off", {"MEMORY_GUARD_CLASSIFIER": "off"})):
            args.label = label
            names: list[str] = []
            cold = _cold(templates.server_url)

            def on_database(name: str, cold: Callable[[str], None] = cold,
                            names: list[str] = names) -> None:
                names.append(name)
                cold(name)

            def worker_db(_url: str, extra: dict[str, str] = extra) -> dict[str, str]:
                return dict(extra)

            before = voyage.requests()
            result = run_ours(args, templates, redis_url, llm, voyage, log_dir,
                              worker_db=worker_db,
                              on_database=on_database)
            total = voyage.requests() - before
            drain_calls = round(result.embed_calls_per_session * args.sessions)
            rows.append((label, result, total - drain_calls, drain_calls,
                         _unscreened(templates.server_url, names)))
            print(f"  {label}: {result.sessions} sessions in {result.seconds:.1f}s", flush=True)
        calls, ms = e5_first_availability(templates)
    on, off = rows[0][1], rows[1][1]
    print(f"\n{args.workers} workers x prefork -c {args.concurrency}, {args.sessions} sessions "
          f"(3 candidates each), fake LLM {args.llm_ms:.0f} ms, fake Voyage {args.embed_ms:.0f} "
          "ms, fresh database each\n")
    print("| variant | drain s | sessions/s | start-up embedding calls | embedding calls per "
          "session (drain) | memories not current at the end | verified |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for label, r, startup, drain, not_current in rows:
        print(f"| {label} | {r.seconds:.1f} | {r.sessions_per_s:.2f} | {startup} | "
              f"{drain / r.sessions:.3f} | {not_current} | {r.verification.ok} |")
    print(f"\ndrain time, layer on / layer off: {on.seconds / off.seconds:.3f}")
    print(f"e5 on a fresh database: meaning layer ready after {calls} embedding calls, "
          f"{ms:.0f} ms")
    return 0 if all(r.verification.ok for _, r, *_ in rows) and calls == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
