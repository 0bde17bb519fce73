"""Ask every question of a replayed suite through recall — each production strategy (one
row each, named as the strategy: ``grouped``, ``decay``, ``composite``, ``fused``), plus the
baseline — and score what comes back (:mod:`eros.evaluation.core.scoring`).

The **baseline** is the naive profile layer that dreaming replaces: every raw user turn
embedded as it was said, recalled by plain cosine top-K (the same K as ``decay`` and
``composite``). It costs no LLM call; its embedding tokens are counted.

``fused`` is asked exactly as the product asks it: through :func:`recall_by_vector`, over the
turns the replay's classification indexed in ``engine.memory_turns`` (the product's own write
path, the same embedder). The eval-only ``hybrid`` row it replaces is gone.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from eros.core.names import RECALL_STRATEGIES, RecallStrategy
from eros.evaluation.core.scoring import Cell, Scored, aggregate
from eros.evaluation.core.suite import Suite
from eros.evaluation.services.asking import ask_user
from eros.evaluation.services.ids import persona_of
from eros.evaluation.services.judges import Judge
from eros.evaluation.services.progress import Progress, silent
from eros.evaluation.services.replay import ReplayReport, replay
from eros.evaluation.services.setup import WorkerSetup
from eros.providers.base import ChatCompleter, Embedder
from eros.settings import Settings

if TYPE_CHECKING:
    from eros.evaluation.services.parallel import Workers


@dataclass
class EvalResult:
    suite: str
    users: int
    questions: int
    k: int
    judge: str
    embedder: str
    llm: str
    replay: ReplayReport
    baseline_embedding_tokens: int
    judge_llm_calls: int
    wall_secs: float
    cells: dict[str, dict[str, Cell]]
    scored: list[Scored] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        per_user = max(self.users, 1)
        return {
            "suite": self.suite, "users": self.users, "questions": self.questions, "k": self.k,
            "judge": self.judge, "embedder": self.embedder, "llm": self.llm,
            "wall_secs": round(self.wall_secs, 3),
            "pipeline": {**asdict(self.replay),
                         "per_user": {"llm_calls": self.replay.llm_calls / per_user,
                                      "tokens": (self.replay.prompt_tokens
                                                 + self.replay.completion_tokens) / per_user,
                                      "cost_usd": self.replay.cost_usd / per_user}},
            "baseline": {"llm_calls": 0, "embedding_tokens": self.baseline_embedding_tokens},
            "judge_llm_calls": self.judge_llm_calls,
            "systems": {system: {kind: asdict(cell) for kind, cell in kinds.items()}
                        for system, kinds in self.cells.items()},
            "answers": [asdict(s) for s in self.scored]}


def evaluate(engine: Engine, settings: Settings, suite: Suite, llm: ChatCompleter,
             embedder: Embedder, judge: Judge, *,
             strategies: Sequence[RecallStrategy] = RECALL_STRATEGIES,
             consolidation: bool = True, extractor: ChatCompleter | None = None,
             progress: Progress = silent, jobs: int = 1,
             setup: WorkerSetup | None = None) -> EvalResult:
    """Replay ``suite`` into ``engine`` (a scratch database), ask, judge and score.

    Where a question names its evidence turns, every system is also scored exactly, by
    provenance, at every K of ``KS`` and within every token budget of ``BUDGETS``. ``jobs``
    above 1 with a ``setup`` (how a worker rebuilds the engine, providers and judge): the
    questions are asked by that many worker processes (:mod:`.parallel`, started before the
    ingest, so they are ready when the replay ends) — every figure the same, in the same
    order."""
    started = time.perf_counter()
    workers = None
    if jobs > 1 and setup is not None and len(suite.users) > 1:
        from eros.evaluation.services.parallel import Workers

        workers = Workers(setup, settings, min(jobs, len(suite.users)))
    try:
        replayed = replay(engine, settings, suite, llm, embedder, consolidation=consolidation,
                          extractor=extractor, progress=progress)
        mark = time.perf_counter()
        scored, baseline_tokens = ask(engine, settings, suite, embedder, judge,
                                      strategies=strategies, progress=progress,
                                      workers=workers)
        replayed.timings["ask"] = time.perf_counter() - mark
    finally:
        if workers is not None:
            workers.close()
    return EvalResult(suite=suite.name, users=len(suite.users), questions=len(suite.questions),
                      k=settings.recall_k, judge=judge.name, embedder=embedder.name,
                      llm=llm.name, replay=replayed, baseline_embedding_tokens=baseline_tokens,
                      judge_llm_calls=judge.llm_calls,
                      wall_secs=time.perf_counter() - started, cells=aggregate(scored),
                      scored=scored)


def ask(engine: Engine, settings: Settings, suite: Suite, embedder: Embedder, judge: Judge, *,
        strategies: Sequence[RecallStrategy] = RECALL_STRATEGIES,
        progress: Progress = silent, workers: Workers | None = None
        ) -> tuple[list[Scored], int]:
    """Ask every question of an already replayed ``suite`` and score each system's answer
    (and the baseline's); the baseline's embedding tokens. Separate from the replay so a
    calibration study (``bench/fusion_dev.py``) can ask one replay under several settings.

    With ``workers`` (:mod:`.parallel`) the users are asked by worker processes — every figure
    the same as asked here, in the same order; the judge's LLM calls are added to
    ``judge.llm_calls``."""
    by_user = defaultdict(list)
    for q in suite.questions:
        by_user[q.user].append(q)
    work = [(user, by_user[user.id]) for user in suite.users if by_user.get(user.id)]
    persona = persona_of(suite)
    with progress("ask", len(suite.questions)) as advance:
        if workers is not None:
            asked, calls = workers.ask(work, strategies, persona, advance)
            judge.llm_calls += calls
        else:
            asked = [ask_user(engine, settings, user, questions, embedder, judge,
                              strategies, persona, advance) for user, questions in work]
    return [s for scored, _ in asked for s in scored], sum(tokens for _, tokens in asked)
