"""The gevent pool a ``--pool=gevent`` worker runs: Celery's, with its prefetched messages
waiting in the worker, and their starts paced.

Why: a drain at 128 in flight on one process ran in waves (bench/RESULTS.md, issue 34 item 1):
every model reply of a wave lands together, each task's later steps wait on the one thread
behind all the others' CPU, so the whole wave ends together and the next starts together — a
~3 s period for a 2.1 s task. Two things here:

- Celery's gevent pool blocks its consumer inside ``spawn`` while every slot is busy: it holds
  one message beyond its slots and refills each freed slot with a broker round trip queued
  behind that CPU. Here the consumer never blocks: a message that finds the pool full waits in
  a local queue, bounded by the prefetch (``worker_prefetch_multiplier`` × concurrency,
  :mod:`eros.tasks.app`), and a task's end starts the next one in its place.
- Starts are paced: no faster than 1.5 × the slots per task duration (a moving average of the
  tasks' wall time), 8 at once, so a wave's starts spread and stay spread (task median 2.55 →
  2.14 s, 75% → 84% of the bound). The pace never binds in a steady state — ``n`` slots cannot
  start more than ``n`` tasks per task duration for long — only in a burst.

A waiting message is unacknowledged like any prefetched one: once a warm or cold shutdown has
begun it is not started, and it goes back to the queue when the worker's broker connection
closes; on a lost worker it is redelivered (and a stale claim re-taken).

:mod:`eros.worker` points Celery's ``gevent`` pool name at this class, so the Procfile's
``--pool=gevent`` (a contract) stays as written; only a gevent worker imports this module.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import gevent
from celery.concurrency import gevent as celery_gevent
from celery.worker import state as worker_state

#: starts per task duration, as a multiple of the slots; and the starts allowed at once
PACE_FACTOR, PACE_BURST = 1.5, 8


class StartPace:
    """A token bucket for starts: ``factor × slots`` per task duration (a moving average of
    the finished tasks' wall time; no limit before the first has finished), ``burst`` at
    most at once."""

    def __init__(self, slots: int, factor: float = PACE_FACTOR, burst: int = PACE_BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.slots, self.factor, self.burst, self.clock = slots, factor, burst, clock
        self.duration = 0.0
        self._tokens = float(burst)
        self._at = clock()

    def finished(self, took: float) -> None:
        self.duration = 0.9 * self.duration + 0.1 * took if self.duration else took

    def wait(self) -> float:
        """Seconds until the next start may happen (0: now)."""
        if not self.duration:
            return 0.0
        rate = self.factor * self.slots / self.duration
        now = self.clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * rate)
        self._at = now
        # a token's last nanosecond is not worth a timer (nor a clock that cannot add it)
        return 0.0 if self._tokens >= 1 - 1e-9 else (1 - self._tokens) / rate

    def take(self) -> None:
        if self.duration:
            self._tokens -= 1


class TaskPool(celery_gevent.TaskPool):  # type: ignore[misc]
    """Celery's gevent pool whose ``apply_async`` never blocks: a task that finds every slot
    busy (or arrives ahead of the pace) waits in order and starts when one frees."""

    def on_start(self) -> None:
        super().on_start()
        self._waiting: deque[tuple[tuple[Any, ...], dict[str, Any]]] = deque()
        self.pace = StartPace(self.limit)
        self._timer: Any = None

    def on_stop(self) -> None:
        # not started: unacknowledged, so the broker redelivers them once this worker's
        # connection closes (the ones running finish first, as Celery's pool does)
        self._waiting.clear()
        super().on_stop()

    def on_apply(self, *args: Any, **kwargs: Any) -> Any:
        if not self._waiting and self._pool.free_count() and not _shutting_down() \
                and not self._paced():
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
        self.pace.take()
        started = time.monotonic()
        greenlet = super().on_apply(*args, **kwargs)
        # after the pool's own link (which frees the slot): the next waiting task starts
        greenlet.link(lambda done: self._on_finished(time.monotonic() - started))
        return greenlet

    def _on_finished(self, took: float) -> None:
        self.pace.finished(took)
        self._start_waiting()

    def _paced(self) -> bool:
        """Too early for the next start: a timer starts what waits when it is time."""
        wait = self.pace.wait()
        if wait <= 0:
            return False
        if self._timer is None:
            self._timer = gevent.spawn_later(wait, self._on_timer)
        return True

    def _on_timer(self) -> None:
        self._timer = None
        self._start_waiting()

    def _start_waiting(self) -> None:
        # runs in the hub (a link callback) too: spawn only into a free slot, never block;
        # once a shutdown has begun nothing waiting starts (it goes back to the broker)
        while self._waiting and self._pool.free_count() and not _shutting_down() \
                and not self._paced():
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
