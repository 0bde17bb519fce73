"""``eros eval --jobs``: the classify and ask phases in worker processes give every figure the
single process gives, in the same order (issue 31's cost target: the full LoCoMo eval in
minutes).

The synthetic LoCoMo sample of ``test_eval_locomo_replay`` (two users, observation replay) is
replayed into two real databases, once in this process and once by two spawned workers (each
rebuilding the engine, the providers behind the embedding cache and the judge from the
setup); the questions are asked of each, in this process and by two workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from eros.core.evaluation.formats import convert
from eros.core.evaluation.scoring import Scored
from eros.core.evaluation.suite import Suite
from eros.providers import make_providers
from eros.services.evaluation.observations import ObservationReplay
from eros.services.evaluation.parallel import Workers
from eros.services.evaluation.progress import Progress
from eros.services.evaluation.replay import ReplayReport, replay
from eros.services.evaluation.run import ask
from eros.services.evaluation.setup import WorkerSetup, cached, make_judge
from eros.settings import Settings, load_settings
from tests.integration.test_eval_locomo_replay import SAMPLE
from tests.support.services import TemplateDatabases


@dataclass
class Run:
    replayed: ReplayReport
    alone: list[Scored]
    workers: list[Scored]
    tokens: tuple[int, int]
    steps: dict[str, list[int]]


def _counting(steps: dict[str, list[int]]) -> Progress:
    @contextmanager
    def progress(phase: str, total: int) -> Iterator[Callable[[int], None]]:
        yield steps.setdefault(phase, []).append
    return progress


def _run(templates: TemplateDatabases, cache: Path, suite: Suite, settings: Settings,
         jobs: int) -> Run:
    """Replay with ``jobs`` workers, then ask in this process and by two workers."""
    url = templates.clone()
    engine = create_engine(url)
    try:
        llm, plain = make_providers(settings)
        setup = WorkerSetup(url, cache)
        embedder = cached(plain, setup.cache)
        steps: dict[str, list[int]] = {}
        replay_workers = Workers(setup, settings, jobs) if jobs > 1 else None
        try:
            replayed = replay(engine, settings, suite, llm, embedder,
                              extractor=ObservationReplay(suite), workers=replay_workers,
                              progress=_counting(steps))
        finally:
            if replay_workers is not None:
                replay_workers.close()
        alone, alone_tokens = ask(engine, settings, suite, embedder,
                                  make_judge("embedding", llm, embedder, None, False))
        judge = make_judge("embedding", llm, embedder, None, False)
        with Workers(setup, settings, 2) as workers:
            workers.run([], steps.setdefault("none", []).append)  # a run of nothing
            workers_scored, worker_tokens = ask(engine, settings, suite, embedder, judge,
                                                workers=workers, progress=_counting(steps))
        assert judge.llm_calls == 0
        return Run(replayed, alone, workers_scored, (alone_tokens, worker_tokens), steps)
    finally:
        engine.dispose()
        templates.drop(url)


def _figures(scored: list[Scored]) -> list[Scored]:
    return [replace(s, latency_ms=None) for s in scored]


@pytest.fixture(scope="module")
def runs(templates: TemplateDatabases, tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[Suite, Run, Run]:
    suite = convert(SAMPLE, "locomo")
    settings = load_settings(eros_providers="offline", embedding_dim=512,
                             eros_offline_embedder="hash")
    cache = tmp_path_factory.mktemp("eval") / "cache.sqlite3"
    return (suite, _run(templates, cache, suite, settings, 1),
            _run(templates, cache, suite, settings, 2))


def test_workers_ask_with_the_same_figures_as_one_process(runs: tuple[Suite, Run, Run]
                                                          ) -> None:
    suite, one, _ = runs
    assert len({s.question_id for s in one.alone}) == len(suite.questions)
    assert _figures(one.workers) == _figures(one.alone)
    assert one.tokens[0] == one.tokens[1] > 0
    assert sum(one.steps["ask"]) == len(suite.questions)  # every question reported once


def test_workers_classify_into_the_same_memories(runs: tuple[Suite, Run, Run]) -> None:
    suite, one, two = runs
    sessions = sum(len(u.sessions) for u in suite.users)
    assert two.replayed.classified == one.replayed.classified == sessions
    assert two.replayed.memories == one.replayed.memories > 0
    assert two.replayed.llm_calls == one.replayed.llm_calls
    assert sum(two.steps["classify"]) == sessions
    assert _figures(two.alone) == _figures(one.alone)
    assert _figures(two.workers) == _figures(one.alone)
