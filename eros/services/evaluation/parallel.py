"""The ask phase of ``eros eval`` in worker processes, one user at a time each (``--jobs``).

A full LoCoMo run asks ~2,000 questions, eight recalls each; a recall spends most of its wall
time waiting on round trips to PostgreSQL, so while one process waits another computes.
Users are independent: each worker rebuilds the engine, the embedder (behind the same
embedding cache) and the judge from an :class:`~.setup.AskSetup`, asks whole users with
:func:`~.run.ask_user` and sends back their scores; the parent puts them back in the suite's
order, so every figure is the one a single process computes. Workers are started with
``spawn`` (a fresh interpreter: no inherited connection, SQLite handle or model thread
pool), and each says when it has answered a question, for the progress line.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue as queues
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from eros.core.evaluation.scoring import Scored
from eros.core.evaluation.suite import Question, User
from eros.core.fusion import RecallStrategy
from eros.services.evaluation.setup import AskSetup
from eros.settings import Settings

Asked = tuple[list[Scored], int]
_WORKER: dict[str, Any] = {}


def _start(setup: AskSetup, settings: Settings, ticks: Any) -> None:
    """A worker's start: its own engine, embedder and judge (the providers announced once,
    by the parent)."""
    from eros.services.evaluation.setup import build

    logging.getLogger("eros.providers").setLevel(logging.ERROR)
    engine, embedder, judge = build(setup, settings)
    _WORKER.update(engine=engine, embedder=embedder, judge=judge, settings=settings,
                   ticks=ticks)


def _ask(index: int, user: User, questions: Sequence[Question],
         strategies: Sequence[RecallStrategy], persona: uuid.UUID) -> tuple[Asked, int]:
    """One user asked in a worker: the scores, the baseline's tokens and the judge's LLM
    calls for this user."""
    from eros.services.evaluation.asking import ask_user

    judge, ticks = _WORKER["judge"], _WORKER["ticks"]
    calls = judge.llm_calls
    asked = ask_user(_WORKER["engine"], _WORKER["settings"], user, questions,
                     _WORKER["embedder"], judge, strategies, persona,
                     lambda steps: ticks.put((index, steps)))
    return asked, judge.llm_calls - calls


def ask_in_workers(setup: AskSetup, settings: Settings,
                   work: Sequence[tuple[User, Sequence[Question]]],
                   strategies: Sequence[RecallStrategy], persona: uuid.UUID, jobs: int,
                   advance: Callable[[int], None]) -> tuple[list[Asked], int]:
    """Each user of ``work`` asked by one of ``jobs`` worker processes: the per-user results
    in ``work``'s order, and the judge's LLM calls in all."""
    context = multiprocessing.get_context("spawn")
    ticks = context.Queue()
    counted = [0] * len(work)  # questions already reported per user

    def tick(index: int, steps: int) -> None:
        if counted[index] + steps <= len(work[index][1]):
            counted[index] += steps
            advance(steps)

    def drain() -> None:
        try:
            while True:
                tick(*ticks.get_nowait())
        except queues.Empty:
            pass

    results: list[tuple[Asked, int] | None] = [None] * len(work)
    with ProcessPoolExecutor(max_workers=min(jobs, len(work)), mp_context=context,
                             initializer=_start, initargs=(setup, settings, ticks)) as pool:
        futures: dict[Future[tuple[Asked, int]], int] = {
            pool.submit(_ask, i, user, questions, strategies, persona): i
            for i, (user, questions) in enumerate(work)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            drain()
            for future in done:
                index = futures[future]
                results[index] = future.result()
                tick(index, len(work[index][1]) - counted[index])  # ticks still in flight
    ticks.close()
    finished = [r for r in results if r is not None]
    return [asked for asked, _ in finished], sum(calls for _, calls in finished)
