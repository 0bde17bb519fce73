"""A worker moves its start-up objects out of the cyclic collector's generations before its pool
forks and once it is ready (issue 34: a gevent worker's full collections walked ~240k objects
that never die)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from celery import signals
from celery.utils.dispatch import Signal

import eros.lifecycle  # noqa: F401 - connects the handlers


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.parametrize("signal", [signals.worker_ready, signals.worker_before_create_process],
                         ids=["ready", "before-fork"])
def test_the_worker_freezes_what_it_built_to_start(signal: Signal) -> None:
    # once ready, and before the prefork pool forks a child (Celery collects fully each time)
    before = len(gc.get_objects())
    signal.send(sender=None)
    assert gc.get_freeze_count() >= before // 2
    # what the tasks make afterwards is collected as before
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1


def test_a_forked_pool_process_freezes_what_it_inherited() -> None:
    signals.worker_process_init.send(sender=None)
    assert gc.get_freeze_count() > 0
