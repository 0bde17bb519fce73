"""Structured logs: one JSON event per line, carrying the session and task ids.

Message contents never appear at INFO: log calls pass ids and counts, not text.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from eros.core.names import CLASSIFY_TASK

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message",
                                                                              "asctime"}


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "event", "task_id", "task_name", "session_id", …}``."""

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "event": record.getMessage(),
        }
        task = _current_task()
        if task is not None:
            event["task_id"], event["task_name"], session_id = task
            if session_id:
                event["session_id"] = session_id
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                event[key] = value if isinstance(value, str | int | float | bool) else str(value)
        if record.exc_info:
            event["exc"] = self.formatException(record.exc_info)
        return json.dumps(event, ensure_ascii=False)


def _current_task() -> tuple[str, str, str | None] | None:
    """The running task's id and name, and the session it works on (its first argument)."""
    from celery._state import get_current_task

    task = get_current_task()
    if task is None or task.request is None or not task.request.id:
        return None
    args = task.request.args or ()
    session_id = str(args[0]) if task.name == CLASSIFY_TASK and args else None
    return str(task.request.id), str(task.name), session_id


#: what Celery's own task lines carry that may hold a person's text (issue 14).
_CELERY_PAYLOAD = ("args", "kwargs", "return_value")
HIDDEN = "<hidden>"


def _scrub(context: Any) -> Any:
    if isinstance(context, dict) and any(k in context for k in _CELERY_PAYLOAD):
        return {k: (HIDDEN if k in _CELERY_PAYLOAD else v) for k, v in context.items()}
    return context


class PrivacyFilter(logging.Filter):
    """Celery logs a task's arguments ("Task … received", in ``extra['data']``) and its return
    value ("… succeeded in …s: <result>") at INFO: a recall query, the memories it found and
    the rendered prompt. This filter, on every handler, replaces them with ``<hidden>`` in
    both formats; ids, names and run times stay. It never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.args = _scrub(record.args)
        data = getattr(record, "data", None)
        if data is not None:
            record.data = _scrub(data)
        return True


def add_privacy_filter(handlers: list[logging.Handler]) -> None:
    """Idempotent: one PrivacyFilter per handler."""
    for handler in handlers:
        if not any(isinstance(f, PrivacyFilter) for f in handler.filters):
            handler.addFilter(PrivacyFilter())


def install(logger: logging.Logger, fmt: str, level: str) -> None:
    """Put our formatter and the privacy filter on every handler of ``logger`` (Celery's
    setup-logging signals, in the worker and in beat)."""
    if fmt == "json":
        for handler in logger.handlers:
            handler.setFormatter(JsonFormatter())
    add_privacy_filter(logger.handlers)
    logging.getLogger("eros").setLevel(level)
