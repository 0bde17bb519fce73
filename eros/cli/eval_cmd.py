"""``eros eval``: measure memory quality on a suite (docs/eval.md)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from eros.cli import main
from eros.errors import ErosError

if TYPE_CHECKING:
    from eros.evaluation.core.suite import Suite
    from eros.evaluation.services.run import EvalResult


def _load(path: Path | None, fmt: str) -> Suite:
    from eros.evaluation.core.formats import convert
    from eros.evaluation.core.suite import SuiteError, shipped_suite

    if path is None:
        if fmt != "eros":
            raise click.UsageError("--format needs --suite FILE")
        return shipped_suite()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return convert(document, fmt)  # type: ignore[arg-type]
    except json.JSONDecodeError as err:
        raise ErosError(f"{path}: not JSON: line {err.lineno}: {err.msg}") from None
    except SuiteError as err:
        raise ErosError(f"{path}: {err}") from None


@main.command("eval")
@click.option("--suite", "suite_path", type=click.Path(exists=True, dir_okay=False,
                                                       path_type=Path),
              help="A suite file (default: the suite eros ships).")
@click.option("--format", "fmt", type=click.Choice(["eros", "locomo", "longmemeval"]),
              default="eros", show_default=True,
              help="The suite file's format: ours, LoCoMo's locomo10.json or LongMemEval's "
                   "longmemeval_s.json.")
@click.option("--judge", type=click.Choice(["embedding", "llm"]), default="embedding",
              show_default=True, help="embedding: offline nearest-statement judge; llm: the "
                                      "configured model judges (needs OPENROUTER_API_KEY).")
@click.option("--answers", is_flag=True,
              help="With --judge llm: also generate an answer per question from the recalled "
                   "memories and grade it against the gold answer (answer accuracy).")
@click.option("--judge-floor", type=click.FloatRange(0, 1),
              help="The embedding judge's minimum similarity (default: per embedder).")
@click.option("--users", type=click.IntRange(min=1), help="Only the first N users (quicker).")
@click.option("--no-consolidation", is_flag=True, help="Skip the consolidation pass.")
@click.option("--extractor", type=click.Choice(["configured", "observations"]),
              default="configured", show_default=True,
              help="configured: the configured extraction model (the offline heuristic "
                   "without keys); observations: the suite's own per-session observations "
                   "(LoCoMo) replayed as the model's reply, citing their turns — realistic "
                   "memories at full scale with no LLM.")
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Keep embeddings across runs in the data directory (EROS_DATA_DIR; a "
                   "SQLite file of vectors keyed by a hash of model, input type and text; no "
                   "text is stored): a second run of a suite embeds only what changed.")
@click.option("--progress/--no-progress", default=None,
              help="Progress per phase on stderr: a bar on a terminal, else a line every 15 s "
                   "(default: on; --no-progress: none).")
@click.option("--jobs", type=click.IntRange(min=1),
              help="Worker processes asking the questions, one user at a time each (default: "
                   "the CPUs, at most 4); the figures are the same for any number.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write every figure (and each answer's score) to this file.")
def eval_command(suite_path: Path | None, fmt: str, judge: str, answers: bool,
                 judge_floor: float | None, users: int | None, no_consolidation: bool,
                 extractor: str, cache: bool, progress: bool | None, jobs: int | None,
                 json_path: Path | None) -> None:
    """Replay a suite through the real pipeline and score recall.

    Every session is ingested into a SCRATCH embedded database (never DATABASE_URL), claimed
    and classified as in production, dated by its session, consolidated, and every question
    is asked through recall with each strategy (grouped, decay, composite) and the baseline
    (raw user turns, cosine top-K). Prints, per question type: evidence recall@K and its ratio
    to the baseline, the stale-first rate (knowledge updates), the duplicate share of the top
    K; where the suite names its evidence turns (LoCoMo, LongMemEval), exact recall by
    provenance at K = 5, 10, 25 and within 500, 1,000 and 2,000 rendered tokens; recall
    latency p50/p95. Providers are the configured ones (offline without keys). Nothing is
    downloaded.
    """
    from eros.settings import load_settings

    if answers and judge != "llm":
        raise click.UsageError("--answers needs --judge llm")
    suite = _load(suite_path, fmt).subset(users)
    if extractor == "observations" and not any(s.observations for u in suite.users
                                               for s in u.sessions):
        raise click.UsageError("--extractor observations needs a suite with observations "
                               "(--format locomo)")
    base = load_settings(database_url=None)
    if judge == "llm" and base.llm_is_offline:
        raise ErosError("--judge llm needs OPENROUTER_API_KEY (and EROS_PROVIDERS not offline)")
    root = Path(tempfile.mkdtemp(prefix="eros-eval-", dir="/tmp"))
    try:
        result = _run(suite, root, judge, answers, judge_floor, not no_consolidation,
                      extractor, "off" if progress is False
                      else "bars" if sys.stderr.isatty() else "lines", cache,
                      jobs or min(os.cpu_count() or 1, 4))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _print(result)
    if json_path is not None:
        json_path.write_text(json.dumps(result.to_json(), ensure_ascii=False, indent=1,
                                        default=str) + "\n", encoding="utf-8")
        click.echo(f"figures written to {json_path}", err=True)


@contextmanager
def _bar(phase: str, total: int) -> Iterator[Callable[[int], None]]:
    with click.progressbar(length=max(total, 1), label=f"{phase:<12}", file=sys.stderr,
                           show_eta=True, show_pos=True) as bar:
        yield bar.update


def _run(suite: Suite, root: Path, judge_name: str, answers: bool, floor: float | None,
         consolidation: bool, extractor_name: str = "configured",
         progress: str = "off", cache: bool = False, jobs: int = 1) -> EvalResult:
    from eros.db.engine import make_engine
    from eros.devstack.embedded import EmbeddedStack
    from eros.evaluation.services.observations import ObservationReplay
    from eros.evaluation.services.progress import lines, silent
    from eros.evaluation.services.run import evaluate
    from eros.evaluation.services.setup import JudgeName, WorkerSetup, cached, make_judge
    from eros.providers import make_providers
    from eros.providers.base import ChatCompleter
    from eros.settings import load_settings

    stack = EmbeddedStack(None, None, need_db=True, need_broker=False, root=root)
    try:
        services = stack.start()
        settings = load_settings(database_url=services.database_url)
        llm, embedder = make_providers(settings)
        cache_path = None
        if cache:
            from eros.devstack.embedded import data_dir

            cache_path = data_dir() / "eval-embeddings.sqlite3"
        embedder = cached(embedder, cache_path)
        which: JudgeName = "llm" if judge_name == "llm" else "embedding"
        judge = make_judge(which, llm, embedder, floor, answers)
        setup = WorkerSetup(settings.require_database_url(), cache_path, which, floor, answers)
        extractor: ChatCompleter | None = ObservationReplay(suite) \
            if extractor_name == "observations" else None
        click.echo(f"eval: {suite.name}: {len(suite.users)} users, "
                   f"{sum(len(u.sessions) for u in suite.users)} sessions, "
                   f"{len(suite.questions)} questions; extractor "
                   f"{(extractor or llm).name}, LLM {llm.name}, embeddings "
                   f"{embedder.name}, judge {judge.name}; {jobs} "
                   f"job{'s' if jobs > 1 else ''}", err=True)
        engine = make_engine(settings.require_database_url(), pool_size=2)
        try:
            return evaluate(engine, settings, suite, llm, embedder, judge,
                            consolidation=consolidation, extractor=extractor,
                            progress=_bar if progress == "bars" else lines(
                                lambda line: click.echo(line, err=True))
                            if progress == "lines" else silent, jobs=jobs, setup=setup)
        finally:
            engine.dispose()
    finally:
        stack.stop()


def _print(r: EvalResult) -> None:
    from eros.evaluation.core.scoring import render_table

    p = r.replay
    per_user = max(r.users, 1)
    click.echo(render_table(r.cells, r.k))
    click.echo(
        f"\n{r.suite}: {r.users} users, {r.questions} questions, K={r.k}, judge {r.judge}, "
        f"embeddings {r.embedder}, LLM {r.llm}\n"
        f"pipeline: {p.classified} sessions classified, {p.memories} memories, "
        f"{p.merged} merged, {p.superseded} superseded; per user {p.llm_calls / per_user:.1f} "
        f"LLM calls, {(p.prompt_tokens + p.completion_tokens) / per_user:.0f} tokens, "
        f"${p.cost_usd / per_user:.5f}; baseline: 0 LLM calls, "
        f"{r.baseline_embedding_tokens / per_user:.0f} embedding tokens per user\n"
        f"judge LLM calls {r.judge_llm_calls}; wall {r.wall_secs:.1f}s ("
        + ", ".join(f"{k} {v:.1f}s" for k, v in p.timings.items()) + ")")
