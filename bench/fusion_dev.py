#!/usr/bin/env python3
"""Calibration study for ``fused`` (issue 31): replay a suite ONCE, then ask it under several
settings variants and print ``fused``'s exact recall per variant beside the memory-only
strategies and the baseline (asked once, with the first variant).

A development tool: it runs the production recall (:func:`recall_by_vector` through
:func:`eros.evaluation.services.run.ask`) with settings overrides, so a variant is a value of
the RECALL_FUSION_* settings, never a patched function. Use it on the DEVELOPMENT sets only
(LoCoMo's first users, the shipped suite, ``implicit_suite.json``,
``implicit_heavy_suite.json``) — never on ``implicit_holdout_suite.json``.

    python -m bench.fusion_dev --suite /tmp/locomo10.json --format locomo \\
        --extractor observations --users 6 \\
        --variant shipped: --variant z:recall_fusion_calibration=z

The replay goes into a scratch database on ``EROS_BENCH_DATABASE_URL`` (a superuser URL), or
on an embedded PostgreSQL, dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.claim_bench import scratch_database
from eros.evaluation.core.exact import BUDGETS, KS
from eros.evaluation.core.formats import convert
from eros.evaluation.core.scoring import aggregate


def _value(raw: str) -> Any:
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(raw.lower(), raw)


def _variant(text: str) -> tuple[str, dict[str, Any]]:
    name, _, rest = text.partition(":")
    pairs = [p.split("=", 1) for p in rest.split(",") if p]
    return name, {k.strip(): _value(v.strip()) for k, v in pairs}


def _row(label: str, cell: Any) -> str:
    at = cell.recall_at or (None,) * len(KS)
    within = cell.recall_within or (None,) * len(BUDGETS)
    figures = "".join(f"  {'—' if v is None else f'{100 * v:5.1f}%':>6}" for v in (*at, *within))
    stale = "—" if cell.stale_first is None else f"{100 * cell.stale_first:5.1f}%"
    judged = "—" if cell.recall is None else f"{100 * cell.recall:5.1f}%"
    return f"{label:<34}{cell.questions:>5}{figures}  {judged:>7}  {stale:>7}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default=None, help="default: the shipped suite")
    ap.add_argument("--format", default="eros", choices=["eros", "locomo", "longmemeval"])
    ap.add_argument("--extractor", default="configured", choices=["configured", "observations"])
    ap.add_argument("--users", type=int, default=None)
    ap.add_argument("--variant", action="append", default=[],
                    help="name:setting=value,... (settings field names, lower case)")
    args = ap.parse_args(argv)
    if "holdout" in str(args.suite):
        print("fusion_dev: the held-out set is never tuned on", file=sys.stderr)
        return 2

    from eros.evaluation.core.suite import shipped_suite
    from eros.evaluation.services.run import ask

    suite = (convert(json.loads(Path(args.suite).read_text(encoding="utf-8")), args.format)
             if args.suite else shipped_suite()).subset(args.users)
    variants = [_variant(v) for v in args.variant] or [("shipped", {})]
    with replayed(suite, args.extractor) as (engine, settings, embedder, judge):
        head = (f"{'variant / system':<34}{'n':>5}"
                + "".join(f"  {f'r@{n}':>6}" for n in KS)
                + "".join(f"  {f'≤{n}t':>6}" for n in BUDGETS) + "   judged    stale")
        print(head)
        for i, (name, overrides) in enumerate(variants):
            cfg = settings.model_copy(update=overrides)
            t = time.perf_counter()
            scored, _ = ask(engine, cfg, suite, embedder, judge,
                            strategies=("grouped", "decay", "composite", "fused") if i == 0
                            else ("fused",))
            cells = aggregate(scored)
            asked = {q.id: q.question for q in suite.questions}
            stale = [s.question_id for s in scored if s.system == "fused" and s.stale_first]
            if stale:
                print(f"# {name}: stale first: "
                      + "; ".join(f"{q} {asked[q]!r}" for q in stale))
            for system, kinds in cells.items():
                if i > 0 and system != "fused":
                    continue
                for kind, cell in sorted(kinds.items()):
                    label = f"{name if system == 'fused' else system} {kind}"
                    print(_row(label, cell))
            print(f"# {name}: asked in {time.perf_counter() - t:.1f}s {overrides}",
                  flush=True)
    return 0


@contextmanager
def replayed(suite: Any, extractor: str) -> Iterator[tuple[Any, Any, Any, Any]]:
    """A scratch database with ``suite`` replayed as ``eros eval`` replays it (its embedding
    cache shared): (the engine, the settings, the embedder, the judge) to ask with."""
    from eros.db.engine import make_engine
    from eros.devstack.embedded import data_dir
    from eros.evaluation.db.eval_cache import VectorCache
    from eros.evaluation.services.cached_embedder import CachedEmbedder
    from eros.evaluation.services.judges import DEFAULT_FLOORS, EmbeddingJudge
    from eros.evaluation.services.observations import ObservationReplay
    from eros.evaluation.services.replay import replay
    from eros.providers import make_providers
    from eros.settings import load_settings

    with scratch_database() as database_url:
        settings = load_settings(database_url=database_url)
        llm, embedder = make_providers(settings)
        embedder = CachedEmbedder(embedder, VectorCache(
            data_dir() / "eval-embeddings.sqlite3"))
        judge = EmbeddingJudge(embedder, DEFAULT_FLOORS.get(embedder.name, 0.5))
        replayer = ObservationReplay(suite) if extractor == "observations" else None
        engine = make_engine(settings.require_database_url(), pool_size=2)
        try:
            t = time.perf_counter()
            replay(engine, settings, suite, llm, embedder, extractor=replayer)
            print(f"# {suite.name}: replayed in {time.perf_counter() - t:.1f}s", flush=True)
            yield engine, settings, embedder, judge
        finally:
            engine.dispose()


if __name__ == "__main__":
    raise SystemExit(main())
