"""A gevent worker builds its result backend once, not once per task (issue 34).

Celery keeps a backend that is not marked thread-safe per thread; gevent makes that per
greenlet, and the gevent pool runs each task in a new greenlet, so the tracer built a Redis
backend for every task. Threads stand in for greenlets (each has its own ``threading.local``).
"""

from __future__ import annotations

import sys
import threading
import types

import pytest

from eros.settings import load_settings
from eros.tasks.app import create_app

REDIS = "redis://127.0.0.1:6399/0"


def _backend_in_thread(app: object) -> object:
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(app.backend))  # type: ignore[attr-defined]
    thread.start()
    thread.join(10)
    return seen[0]


def test_a_gevent_worker_shares_one_result_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    patched = types.SimpleNamespace(is_module_patched=lambda name: name == "socket")
    monkeypatch.setitem(sys.modules, "gevent.monkey", patched)
    app = create_app(load_settings(redis_url=REDIS, broker_url=None))
    assert app.conf.result_backend_thread_safe is True
    assert _backend_in_thread(app) is _backend_in_thread(app)


def test_other_processes_keep_a_backend_per_thread() -> None:
    app = create_app(load_settings(redis_url=REDIS, broker_url=None))
    assert app.conf.result_backend_thread_safe is False
    assert _backend_in_thread(app) is not _backend_in_thread(app)
