"""Every task's arguments are checked against one strict model (issue 32, eros/tasks/args.py).

- Every registered ``eros.*`` task has a model, and the model's fields are the function's
  parameters: same names, the same ones required, the same defaults. A new task without a
  model (or a parameter added to one side only) fails here.
- A JSON client's spellings of false (``"false"``, ``"0"``, ``0``, ``null``), numbers as
  strings, ids that do not parse and unknown keys are refused — and the error names the
  argument, never the value sent.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import uuid
from typing import Any

import pytest
from celery import Celery

import eros
from eros.settings import load_settings
from eros.tasks.app import create_app
from eros.tasks.args import MODELS
from eros.tasks.base import ErosTask


@pytest.fixture(scope="module")
def app() -> Celery:
    for module in pkgutil.walk_packages(eros.__path__, "eros."):  # every feature's tasks
        if ".tasks." in f"{module.name}." and ".migrations" not in module.name:
            importlib.import_module(module.name)
    app = create_app(load_settings(redis_url="redis://127.0.0.1:1/0"))
    app.finalize()
    return app


def _eros_tasks(app: Celery) -> dict[str, ErosTask]:
    return {name: task for name, task in app.tasks.items() if name.startswith("eros.")}


def test_every_task_has_a_model_matching_its_signature(app: Celery) -> None:
    tasks = _eros_tasks(app)
    assert sorted(tasks) == sorted(MODELS), "a task without a model, or a model without a task"
    for name, task in tasks.items():
        assert isinstance(task, ErosTask), name
        params = inspect.signature(task.run).parameters
        fields = MODELS[name].model_fields
        assert list(params) == list(fields), name
        for pname, param in params.items():
            field = fields[pname]
            required = param.default is inspect.Parameter.empty
            assert field.is_required() == required, (name, pname)
            if not required:
                assert field.default == param.default, (name, pname)


USER = str(uuid.uuid4())
SECRET = "my depression diary"  # a value that must never appear in an error

REFUSED: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("eros.forget_user", (USER,), {"sessions": "false"}, "sessions"),
    ("eros.forget_user", (USER,), {"sessions": "0"}, "sessions"),
    ("eros.forget_user", (USER,), {"sessions": 0}, "sessions"),
    ("eros.forget_user", (USER,), {"sessions": None}, "sessions"),
    ("eros.forget_user", (USER, None, "false"), {}, "sessions"),
    ("eros.forget_user", (USER,), {"sensitive": "false"}, "sensitive"),
    ("eros.forget_user", (USER,), {"sensitive": 1}, "sensitive"),
    ("eros.forget_user", (SECRET,), {}, "user_id"),
    ("eros.forget_user", (USER,), {"instance_id": 5}, "instance_id"),
    ("eros.forget_user", (USER,), {"everything": True}, "everything"),
    ("eros.recall", (USER, "q"), {"include_sensitive": "false"}, "include_sensitive"),
    ("eros.recall", (USER, "q"), {"include_sensitive": 0}, "include_sensitive"),
    ("eros.recall", (USER, "q"), {"include_replaced": "false"}, "include_replaced"),
    ("eros.recall", (USER, "q"), {"include_replaced": None}, "include_replaced"),
    ("eros.recall", (USER, "q"), {"k": "5"}, "k"),
    ("eros.recall", (USER, "q"), {"k": True}, "k"),
    ("eros.recall", (USER, "q"), {"scope": SECRET}, "scope"),
    ("eros.recall", (USER, None), {}, "query"),
    ("eros.classify_session", (USER,), {"force": "false"}, "force"),
    ("eros.classify_session", (USER,), {"claim_token": SECRET}, "claim_token"),
    ("eros.claim_idle_sessions", ("5",), {}, "batch"),
    ("eros.apply_retention", (), {"dry_run": True}, "dry_run"),
    ("eros.forget_memory", (), {}, "memory_id"),
    ("eros.forget_session", (SECRET,), {}, "session_id"),
    ("eros.allow_sensitive", (USER, "false"), {}, "label"),
    ("eros.allow_sensitive", (USER, True), {}, "label"),
    ("eros.relabel_sensitivity", (), {"batch": "100"}, "batch"),
    ("eros.relabel_sensitivity", (), {"max_batches": 0}, "max_batches"),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "argument"), REFUSED)
def test_json_spellings_are_refused_naming_the_argument_not_the_value(
        app: Celery, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
        argument: str) -> None:
    error = _eros_tasks(app)[name].argument_error(args, kwargs)
    assert error is not None and argument in error, error
    assert SECRET not in error and "diary" not in error


ACCEPTED: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("eros.forget_user", (USER,), {}),
    ("eros.forget_user", (USER, USER, True), {}),
    ("eros.forget_user", (USER,), {"sensitive": "health"}),
    ("eros.forget_user", (USER,), {"sensitive": True, "sessions": False}),
    ("eros.recall", (USER, "q"), {"include_sensitive": None, "k": 3, "scope": "profile"}),
    ("eros.recall", (USER, "q"), {"strategy": "fused"}),
    ("eros.classify_session", (USER,), {"claim_token": None, "force": True}),
    ("eros.cluster_memories", (), {}),
    ("eros.apply_retention", (), {}),
    ("eros.allow_sensitive", (USER, "health"), {}),
    ("eros.allow_sensitive", (), {"user_id": USER, "label": "all"}),
    ("eros.relabel_sensitivity", (), {"batch": 500, "max_batches": None}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), ACCEPTED)
def test_well_formed_messages_pass(app: Celery, name: str, args: tuple[Any, ...],
                                   kwargs: dict[str, Any]) -> None:
    assert _eros_tasks(app)[name].argument_error(args, kwargs) is None


def test_recall_messages_carry_an_expiry(app: Celery) -> None:
    """Issue 32: a recall message holds the query text; every sender using the eros app
    stamps it with EROS_RECALL_MESSAGE_EXPIRES_SECS (default 60), other tasks with none."""
    from celery import signals
    from kombu import Connection

    seen: dict[str, Any] = {}

    def grab(sender: str | None = None, headers: dict[str, Any] | None = None,
             **_: Any) -> None:
        seen[str(sender)] = (headers or {}).get("expires")

    signals.before_task_publish.connect(grab)
    try:
        with Connection("memory://") as conn, conn.Producer() as producer:
            # (ignore_result: no result-backend subscription, there is no Redis here)
            app.send_task("eros.forget_user", args=[USER], producer=producer,
                          ignore_result=True)
            app.send_task("eros.recall", args=[USER, "q"], producer=producer,
                          ignore_result=True)
    finally:
        signals.before_task_publish.disconnect(grab)
    assert seen["eros.recall"] is not None and seen["eros.forget_user"] is None
    from datetime import datetime
    left = (datetime.fromisoformat(seen["eros.recall"]) - datetime.now().astimezone())
    assert 50 < left.total_seconds() <= 60


def test_recall_strategies_are_the_production_ones(app: Celery) -> None:
    """Issue 31: ``fused`` is a strategy; the eval's retired ``hybrid`` row never was."""
    task = _eros_tasks(app)["eros.recall"]
    assert task.argument_error((USER, "q"), {"strategy": "fused"}) is None
    error = task.argument_error((USER, "q"), {"strategy": "hybrid"})
    assert error is not None and "strategy" in error
