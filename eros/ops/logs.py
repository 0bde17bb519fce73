"""Structured logs: one JSON event per line, carrying the session and task ids.

No personal text at any level, DEBUG included: our log calls pass ids,
counts and codes; Celery's records that carry a message's arguments or body are scrubbed by
:class:`PrivacyFilter`; the SDKs and broker libraries that log request bodies at DEBUG are
held at WARNING (:func:`pin_third_party`) unless ``EROS_LOG_THIRD_PARTY=debug``.
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


#: what Celery's own records carry that may hold a person's text: a task's arguments and
#: result and, in a message's headers, their representations.
_CELERY_PAYLOAD = frozenset({"args", "kwargs", "return_value", "argsrepr", "kwargsrepr",
                             "body"})
HIDDEN = "<hidden>"
#: Celery's error templates that print a message's body (up to 1 KB of it), its headers
#: (``argsrepr``/``kwargsrepr``) or a report of both: a substring of each template, and the
#: positions of its arguments that stay (the rest become ``<hidden>``; a headers dict keeps
#: only the task's id and name).
_BODY_TEMPLATES = (
    ("Received unregistered task of type", (0, 3)),   # UNKNOWN_TASK_ERROR: name, …, delivery
    ("Received invalid task message", ()),             # INVALID_TASK_ERROR
    ("Can't decode message body", (1, 2)),             # MESSAGE_DECODE_ERROR: type, encoding
    ("Received and deleted unknown message", ()),     # UNKNOWN_FORMAT
    ("TaskPool: Apply", (0,)),                         # DEBUG: the message's args and headers
)
#: what survives of a message's headers in a scrubbed record
_HEADER_KEEP = ("id", "task")


def _scrub(context: Any, depth: int = 0) -> Any:
    """Hide the payload keys of every mapping in ``context``, whatever its shape (a dict, a
    tuple of arguments, a list, nested): the values of those keys never show."""
    if depth > 6:
        return HIDDEN if isinstance(context, dict | tuple | list) else context
    if isinstance(context, dict):
        return {k: (HIDDEN if k in _CELERY_PAYLOAD else _scrub(v, depth + 1))
                for k, v in context.items()}
    if isinstance(context, tuple | list):
        return type(context)(_scrub(v, depth + 1) for v in context)
    return context


def _scrub_body_record(record: logging.LogRecord) -> bool:
    """Celery's unknown-task, invalid-message and undecodable-body errors: everything but
    the harmless arguments is hidden (the body dump is a string, so no key to find)."""
    template = record.msg if isinstance(record.msg, str) else ""
    for marker, keep in _BODY_TEMPLATES:
        if marker in template:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            record.args = tuple(_scrub(a) if i in keep else _header_ids(a)
                                for i, a in enumerate(args))
            return True
    return False


def _header_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: value[k] for k in _HEADER_KEEP if k in value} or HIDDEN
    return HIDDEN


#: libraries that log request bodies or message payloads at DEBUG (and full URLs at INFO): the
#: voyageai SDK (each text it embeds), openai (each prompt), their HTTP stacks (the openai SDK
#: may ship its own ``httpx2``/``httpcore2``: a trailing version number matches too), and the
#: broker clients.
THIRD_PARTY = ("voyage", "openai", "httpx", "httpx2", "httpcore", "httpcore2", "urllib3",
               "requests", "aiohttp", "kombu", "amqp")
_third_party_debug = False
_warned = False
LOUD_WARNING = ("EROS_LOG_THIRD_PARTY=debug: the SDKs' and broker clients' DEBUG records are "
                "ON — they contain request bodies: messages, memories and recall queries. "
                "Never use this in production; unset it as soon as you are done.")


def pin_third_party(mode: str | None) -> None:
    """Hold the libraries in :data:`THIRD_PARTY` at WARNING (their loggers, and a filter on
    our handlers that drops their lower records whatever their level becomes, e.g. through
    ``OPENAI_LOG``); ``mode == "debug"`` lets them through with one loud warning."""
    global _third_party_debug, _warned
    _third_party_debug = (mode or "").strip().lower() == "debug"
    if _third_party_debug:
        if not _warned:
            _warned = True
            logging.getLogger("eros").warning(LOUD_WARNING)
        return
    for name in THIRD_PARTY:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


def _third_party_chatter(record: logging.LogRecord) -> bool:
    if record.levelno >= logging.WARNING or _third_party_debug:
        return False
    root = record.name.split(".", 1)[0]
    return root in THIRD_PARTY or root.rstrip("0123456789") in THIRD_PARTY


class PrivacyFilter(logging.Filter):
    """Celery logs a task's arguments ("Task … received", in ``extra['data']``) and its return
    value ("… succeeded in …s: <result>") at INFO: a recall query, the memories it found and
    the rendered prompt; an unknown task or an undecodable message is logged with up to 1 KB of
    its body and its headers. This filter, on every handler, replaces them with ``<hidden>``
    in both formats, whatever the shape of the record's arguments; ids, names and run times
    stay. It drops only the third-party libraries' records below WARNING (see
    :func:`pin_third_party`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _third_party_chatter(record):
            return False
        if not _scrub_body_record(record) and record.args:
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


def install(logger: logging.Logger, fmt: str, level: str, third_party: str = "warning") -> None:
    """Put our formatter and the privacy filter on every handler of ``logger`` (Celery's
    setup-logging signals, in the worker and in beat), and pin the third-party loggers."""
    if fmt == "json":
        for handler in logger.handlers:
            handler.setFormatter(JsonFormatter())
    add_privacy_filter(logger.handlers)
    logging.getLogger("eros").setLevel(level)
    pin_third_party(third_party)
