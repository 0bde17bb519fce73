"""The gevent pool a ``--pool=gevent`` worker runs: Celery's, with the prefetched messages
waiting in the worker, so a freed slot starts the next task at once.

Why: Celery's gevent pool blocks its consumer inside ``spawn`` while every slot is busy, so it
holds one message at most and refills freed slots one broker round trip at a time. In a drain
the model's replies come back together, and those round trips queue behind the finishing
tasks' CPU on the process's one thread: new tasks start only after the wave has finished,
the next wave's replies come back together again, and the waves stay in step (measured: a
period of ~3 s for a 2.1 s task at 128 in flight, bench/RESULTS.md). Here the consumer never
blocks: a message that finds the pool full waits in a local queue, bounded by the prefetch
(``worker_prefetch_multiplier`` × concurrency, :mod:`eros.tasks.app`), and a task's end
starts the next one in its place. A waiting message is unacknowledged like any prefetched
one: once a warm or cold shutdown has begun it is not started, and it goes back to the queue
when the worker's broker connection closes; on a lost worker it is redelivered (and a stale
claim re-taken).

``install()`` points Celery's ``gevent`` pool name at this class, so the Procfile's
``--pool=gevent`` (a contract) stays as written; :mod:`eros.worker` calls it at import.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from celery import concurrency
from celery.concurrency import gevent as celery_gevent
from celery.worker import state as worker_state

#: what ``--pool=gevent`` names once installed
POOL_PATH = "eros.tasks.green_pool:TaskPool"


class TaskPool(celery_gevent.TaskPool):  # type: ignore[misc]
    """Celery's gevent pool whose ``apply_async`` never blocks: a task that finds every slot
    busy waits in order and starts when one frees."""

    def on_start(self) -> None:
        super().on_start()
        self._waiting: deque[tuple[tuple[Any, ...], dict[str, Any]]] = deque()

    def on_stop(self) -> None:
        # not started: unacknowledged, so the broker redelivers them once this worker's
        # connection closes (the ones running finish first, as Celery's pool does)
        self._waiting.clear()
        super().on_stop()

    def on_apply(self, *args: Any, **kwargs: Any) -> Any:
        if not self._waiting and self._pool.free_count() and not _shutting_down():
            return self._start(args, kwargs)
        self._waiting.append((args, kwargs))
        return None

    def grow(self, n: int = 1) -> None:
        super().grow(n)
        self._start_waiting()

    @property
    def waiting(self) -> int:
        """Messages received and not yet started (for tests and ``inspect``-style checks)."""
        return len(self._waiting)

    def _start(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        greenlet = super().on_apply(*args, **kwargs)
        # after the pool's own link (which frees the slot): the next waiting task starts
        greenlet.link(self._on_finished)
        return greenlet

    def _on_finished(self, _greenlet: Any) -> None:
        self._start_waiting()

    def _start_waiting(self) -> None:
        # runs in the hub (a link callback) too: spawn only into a free slot, never block;
        # once a shutdown has begun nothing waiting starts (it goes back to the broker)
        while self._waiting and self._pool.free_count() and not _shutting_down():
            args, kwargs = self._waiting.popleft()
            self._start(args, kwargs)

    def _get_info(self) -> dict[str, Any]:
        info: dict[str, Any] = super()._get_info()
        info["waiting"] = len(self._waiting)
        return info


def _shutting_down() -> bool:
    """A warm or cold shutdown has been asked for: Celery's signal handlers set these to an
    exit code, which may be 0 (compared by identity, as Celery does: 0 == False)."""
    return any(flag is not None and flag is not False
               for flag in (worker_state.should_stop, worker_state.should_terminate))


def install() -> None:
    """Make ``--pool=gevent`` this pool (Celery resolves the name when the worker starts,
    after the app module is imported)."""
    concurrency.ALIASES["gevent"] = POOL_PATH
