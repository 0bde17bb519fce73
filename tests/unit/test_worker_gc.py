"""A worker moves its start-up objects out of the cyclic collector's generations before its pool
forks and once it is ready (issue 34: a gevent worker's full collections walked ~240k objects
that never die)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from celery import signals

import eros.lifecycle  # noqa: F401 - connects the handlers


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_ready_worker_freezes_what_it_built_to_start() -> None:
    before = len(gc.get_objects())
    signals.worker_ready.send(sender=None)
    assert gc.get_freeze_count() >= before // 2
    # what the tasks make afterwards is collected as before
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1


def test_a_forked_pool_process_freezes_what_it_inherited() -> None:
    signals.worker_process_init.send(sender=None)
    assert gc.get_freeze_count() > 0


def test_the_parent_freezes_before_the_pool_forks_a_child() -> None:
    """Celery collects fully before each fork: frozen, those collections skip what the
    worker built to start."""
    before = len(gc.get_objects())
    signals.worker_before_create_process.send(sender=None)
    assert gc.get_freeze_count() >= before // 2
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1
