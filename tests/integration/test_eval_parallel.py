"""``eros eval --jobs``: the ask phase in worker processes gives every figure the single
process gives, in the same order (issue 31's cost target: the full LoCoMo eval in minutes).

The synthetic LoCoMo sample of ``test_eval_locomo_replay`` (two users, observation replay) is
replayed into a real database; its questions are asked in this process and by two spawned
workers, each rebuilding the engine, the providers behind the embedding cache and the judge
from the setup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from sqlalchemy import create_engine

from eros.evaluation.core.formats import convert
from eros.evaluation.core.scoring import Scored
from eros.evaluation.services.observations import ObservationReplay
from eros.evaluation.services.parallel import Workers
from eros.evaluation.services.replay import replay
from eros.evaluation.services.run import ask
from eros.evaluation.services.setup import WorkerSetup, cached, make_judge
from eros.providers import make_providers
from eros.settings import load_settings
from testkit.services import TemplateDatabases
from tests.integration.test_eval_locomo_replay import SAMPLE


def _figures(scored: list[Scored]) -> list[Scored]:
    return [replace(s, latency_ms=None) for s in scored]


def test_workers_ask_with_the_same_figures_as_one_process(templates: TemplateDatabases,
                                                          tmp_path: Path) -> None:
    suite = convert(SAMPLE, "locomo")
    settings = load_settings(eros_providers="offline", embedding_dim=512,
                             eros_offline_embedder="hash")
    url = templates.clone()
    engine = create_engine(url)
    advanced: list[int] = []

    @contextmanager
    def progress(phase: str, total: int) -> Iterator[Callable[[int], None]]:
        assert (phase, total) == ("ask", len(suite.questions))
        yield advanced.append

    try:
        llm, plain = make_providers(settings)
        setup = WorkerSetup(url, tmp_path / "cache.sqlite3")
        embedder = cached(plain, setup.cache)
        replay(engine, settings, suite, llm, embedder, extractor=ObservationReplay(suite))
        alone, alone_tokens = ask(engine, settings, suite, embedder,
                                  make_judge("embedding", llm, embedder, None, False))
        judge = make_judge("embedding", llm, embedder, None, False)
        with Workers(setup, settings, 2) as workers:
            assert workers.run([], advanced.append) == []  # a run of nothing
            asked, tokens = ask(engine, settings, suite, embedder, judge, workers=workers,
                                progress=progress)
    finally:
        engine.dispose()
        templates.drop(url)
    assert len({s.question_id for s in alone}) == len(suite.questions)
    assert _figures(asked) == _figures(alone)
    assert tokens == alone_tokens > 0
    assert sum(advanced) == len(suite.questions)  # every question reported, once
    assert judge.llm_calls == 0
