"""eros's gevent pool paces its starts (eros/tasks/green_pool.py): a burst of freed slots
starts at most ``factor × slots`` tasks per task duration, a few at once."""

from __future__ import annotations

import pytest

from eros.tasks.green_pool import StartPace


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_pace_before_a_task_has_finished() -> None:
    pace = StartPace(128, factor=1.5, burst=8, clock=Clock())
    for _ in range(500):
        assert pace.wait() == 0.0
        pace.take()


def test_a_burst_then_starts_at_factor_times_slots_per_task_duration() -> None:
    clock = Clock()
    pace = StartPace(128, factor=1.5, burst=8, clock=clock)
    pace.finished(2.0)  # 1.5 × 128 starts per 2 s: one per 1/96 s
    for _ in range(8):
        assert pace.wait() == 0.0
        pace.take()
    assert pace.wait() == pytest.approx(1 / 96)
    clock.now += 1 / 96
    assert pace.wait() == 0.0
    pace.take()
    # a wave of 128 freed slots starts over 128/96 s, not at once
    started, waited = 9, 0.0
    while started < 128:
        wait = pace.wait()
        if wait:
            clock.now += wait
            waited += wait
            continue
        pace.take()
        started += 1
    assert waited == pytest.approx(119 / 96)


def test_the_pace_follows_the_tasks_duration() -> None:
    clock = Clock()
    pace = StartPace(10, factor=1.0, burst=1, clock=clock)
    pace.finished(10.0)
    pace.take()
    assert pace.wait() == pytest.approx(1.0)
    for _ in range(60):  # the tasks became fast
        pace.finished(1.0)
    assert pace.wait() < 0.11
