"""``eros eval``'s ask phase in worker processes (``--jobs``), one user at a time each worker.

A full LoCoMo run asks ~2,000 questions, eight recalls each (a recall is several statements),
and spends most of its wall time waiting on round trips to PostgreSQL: while one process
waits another computes. The users are independent once the replay is done — a question is
asked of its own user, reading only that user's rows — so each worker rebuilds the engine,
the providers (the embedder behind the same embedding cache) and the judge from a
:class:`~.setup.WorkerSetup`, asks whole users and sends back their scores; the parent puts
them back in the suite's order, so every figure is the one a single process computes.
Workers are started with ``spawn`` (a fresh interpreter: no inherited connection, SQLite
handle or model thread pool) when the run starts, so they are ready when the replay ends, and
each says when it has answered a question, for the progress line. (Classification stays in
the command's process: see :func:`~.replay.replay`.)
"""

from __future__ import annotations

import logging
import multiprocessing
import queue as queues
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, TypeVar

from eros.core.names import RecallStrategy
from eros.evaluation.core.scoring import Scored
from eros.evaluation.core.suite import Question, User
from eros.evaluation.services.setup import WorkerSetup
from eros.settings import Settings

Asked = tuple[list[Scored], int]
R = TypeVar("R")
_WORKER: dict[str, Any] = {}


def _start(setup: WorkerSetup, settings: Settings, ticks: Any) -> None:
    """A worker's start: its own engine, providers and judge (the providers were announced
    once, by the parent)."""
    from eros.evaluation.services.setup import build

    logging.getLogger("eros.providers").setLevel(logging.ERROR)
    _WORKER.update(built=build(setup, settings), settings=settings, ticks=ticks)


def _ready() -> None:
    """Nothing: submitted once per worker so that every worker starts at once."""


def _ticker(run: int, index: int) -> Callable[[int], None]:
    ticks = _WORKER["ticks"]
    return lambda steps: ticks.put((run, index, steps))


def _ask(run: int, index: int, user: User, questions: Sequence[Question],
         strategies: Sequence[RecallStrategy], persona: uuid.UUID) -> tuple[Asked, int]:
    """One user asked in a worker: the scores, the baseline's tokens and the judge's LLM
    calls for this user."""
    from eros.evaluation.services.asking import ask_user

    built = _WORKER["built"]
    calls = built.judge.llm_calls
    asked = ask_user(built.engine, _WORKER["settings"], user, questions, built.embedder,
                     built.judge, strategies, persona, _ticker(run, index))
    return asked, built.judge.llm_calls - calls


class Workers:
    """``jobs`` worker processes, started at once (they build their engine and providers
    while the caller replays). Close it (or use it as a context manager) before the database
    stops."""

    def __init__(self, setup: WorkerSetup, settings: Settings, jobs: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.jobs = jobs
        self._ticks = context.Queue()
        self._runs = 0
        self._pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                                         initializer=_start,
                                         initargs=(setup, settings, self._ticks))
        for _ in range(jobs):  # a spawned pool starts a worker per task it cannot place
            self._pool.submit(_ready)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._ticks.close()

    def run(self, tasks: Sequence[tuple[Callable[..., R], tuple[Any, ...], int]],
            advance: Callable[[int], None]) -> list[R]:
        """Each task ``(function, arguments, steps)`` run by a worker (called with this run's
        number and the task's index first), the most steps first; the results in ``tasks``'
        order. ``advance`` gets
        each task's steps as its worker reports them, and what is left of them when it
        ends."""
        self._runs += 1
        run = self._runs
        counted = [0] * len(tasks)  # steps already reported per task

        def tick(index: int, steps: int) -> None:
            steps = min(steps, tasks[index][2] - counted[index])
            counted[index] += steps
            advance(steps)

        def drain() -> None:
            try:
                while True:
                    said, index, steps = self._ticks.get_nowait()
                    if said == run:  # a late tick of an earlier run is dropped
                        tick(index, steps)
            except queues.Empty:
                pass

        results: dict[int, R] = {}
        # the largest first, so that no worker is left with a large one at the end
        largest = sorted(range(len(tasks)), key=lambda i: -tasks[i][2])
        futures: dict[Future[R], int] = {
            self._pool.submit(tasks[i][0], run, i, *tasks[i][1]): i for i in largest}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            drain()
            for future in done:
                index = futures[future]
                results[index] = future.result()
                tick(index, tasks[index][2])  # what is still in flight, or was never said
        return [results[i] for i in range(len(tasks))]

    def ask(self, work: Sequence[tuple[User, Sequence[Question]]],
            strategies: Sequence[RecallStrategy], persona: uuid.UUID,
            advance: Callable[[int], None]) -> tuple[list[Asked], int]:
        """Each user of ``work`` asked by a worker: the per-user results in ``work``'s
        order, and the judge's LLM calls in all."""
        done = self.run([(_ask, (user, questions, strategies, persona), len(questions))
                         for user, questions in work], advance)
        return [asked for asked, _ in done], sum(calls for _, calls in done)
