"""The erasure tasks: ``eros.forget_user``, ``eros.forget_memory``,
``eros.forget_message`` and ``eros.forget_session``. Contract:
names and JSON arguments. Both keep their result (counts and ids, never text) so the product
can confirm the erasure; both are idempotent, so a redelivery or a retry is harmless.

Every erasure is recorded in ``engine.erasure_log``: ``done`` with its counts in
the erasure's own transaction, or ``failed`` with an error code when it cannot succeed. A
transient database error (lock timeout, serialization failure, deadlock, dropped connection)
is retried for as long as it lasts, the retry carrying every argument by name whatever form
the message used (``args=[user]``, ``kwargs={"user_id": …}``, ``instance_id``/``sessions``
either way); anything else is recorded ``failed`` and counted in
``eros_erasures_failed_total``."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import (
    FORGET_MEMORY_TASK,
    FORGET_MESSAGE_TASK,
    FORGET_SESSION_TASK,
    FORGET_USER_TASK,
)
from eros.core.outcomes import task_result
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.privacy.services import erasure, forget
from eros.privacy.tasks import purge
from eros.tasks.base import ErosTask, describe_database_error

log = logging.getLogger("eros.worker")


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _run(task: ErosTask, request: erasure.Request, body: Callable[[], dict[str, Any]],
         retry_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run one erasure: retry a transient database error with every argument by name (and no
    positional ones); record anything else as failed."""
    try:
        result = body()
    except DBAPIError as err:
        task.retry_database(err, args=(), kwargs=retry_kwargs)  # raises Retry if transient
        erasure_id = erasure.record_failed(task.resources.engine, request, err)
        return task_result("error", error=describe_database_error(err), erasure_id=erasure_id)
    except Exception as err:
        erasure.record_failed(task.resources.engine, request, err)
        raise
    _purge_results(task, result.get("erasure_id"))
    return result


def _purge_results(task: ErosTask, erasure_id: int | None) -> None:
    """Delete the user's stored recall results (memories, prompts) from the result backend,
    as ``eros forget`` and the ledger do: best effort, see
    :func:`eros.privacy.tasks.purge.purge_after_erasure`."""
    purge.purge_after_erasure(task.app, task.resources.engine, erasure_id)


@shared_task(base=ErosTask, bind=True, name=FORGET_USER_TASK, ignore_result=False)
def forget_user(self: ErosTask, user_id: str, instance_id: str | None = None,
                sessions: bool = False, sensitive: bool | str | None = None) -> dict[str, Any]:
    """Forget a user (``instance_id`` null) or one relationship; counts of what was removed.
    ``sensitive``: only the user's memories with a special-category label — ``true`` (or
    ``"all"``) for every label, a label (``"health"``, ``"crisis"``, …) for one."""
    uid = _uuid(user_id)
    iid = _uuid(instance_id) if instance_id is not None else None
    if uid is None or (instance_id is not None and iid is None):
        log.error("forget_user: user_id/instance_id must be UUIDs")
        return task_result("invalid_argument")
    label = _sensitive_label(sensitive)
    if label == "invalid" or (label is not None and (iid is not None or sessions)):
        log.error("forget_user: sensitive must be true, 'all' or a label, without "
                  "instance_id or sessions")
        return task_result("invalid_argument")
    retry_kwargs = {"user_id": user_id, "instance_id": instance_id, "sessions": sessions,
                    "sensitive": sensitive}
    if label is not None:
        only = None if label == "all" else label
        request = erasure.Request("sensitive", user_id=uid, task_id=self.request.id)
        result = _run(self, request, lambda: forget.forget_sensitive(
            self.resources.engine, uid, only, request=request), retry_kwargs)
        if result.get("outcome") == "error":
            return result
        return task_result("forgotten", user_id=str(uid), sensitive=label, **result)
    request = forget.user_request(uid, instance_id=iid, task_id=self.request.id)
    result = _run(self, request, lambda: forget.forget_user(
        self.resources.engine, uid, instance_id=iid, sessions=bool(sessions), request=request),
        retry_kwargs)
    if result.get("outcome") == "error":
        return result
    return task_result("forgotten", user_id=str(uid), instance_id=str(iid) if iid else None,
                       **result)


def _sensitive_label(value: bool | str | None) -> str | None:
    """None (not a sensitive erasure), ``all``, a label, or ``invalid``."""
    if value is None or value is False:
        return None
    if value is True:
        return "all"
    label = str(value).strip().lower()
    return label if label == "all" or label in SENSITIVITY_LABELS else "invalid"


@shared_task(base=ErosTask, bind=True, name=FORGET_MEMORY_TASK, ignore_result=False)
def forget_memory(self: ErosTask, memory_id: str) -> dict[str, Any]:
    """Forget one memory, its lineage and what was derived from it; counts of what was
    removed."""
    mid = _uuid(memory_id)
    if mid is None:
        log.error("forget_memory: memory_id must be a UUID")
        return task_result("invalid_argument")
    request = forget.memory_request(mid, task_id=self.request.id)
    result = _run(self, request, lambda: forget.forget_memory(
        self.resources.engine, mid, request=request), {"memory_id": memory_id})
    if result.get("outcome") == "error":
        return result
    return task_result("forgotten", memory_id=str(mid), **result)


@shared_task(base=ErosTask, bind=True, name=FORGET_MESSAGE_TASK, ignore_result=False)
def forget_message(self: ErosTask, message_id: str) -> dict[str, Any]:
    """Erase one chat message (``chat_messages.id``) and every memory derived from it; counts
    of what was removed."""
    mid = _uuid(message_id)
    if mid is None:
        log.error("forget_message: message_id must be a UUID")
        return task_result("invalid_argument")
    request = forget.message_request(task_id=self.request.id)
    result = _run(self, request, lambda: forget.forget_message(
        self.resources.engine, mid, request=request), {"message_id": message_id})
    if result.get("outcome") == "error":
        return result
    return task_result("forgotten", message_id=str(mid), **result)


@shared_task(base=ErosTask, bind=True, name=FORGET_SESSION_TASK, ignore_result=False)
def forget_session(self: ErosTask, session_id: str) -> dict[str, Any]:
    """Forget one conversation (``chat_sessions.id``): its messages, every memory learned from
    it alone, its share of the sources of the others; counts of what was removed."""
    sid = _uuid(session_id)
    if sid is None:
        log.error("forget_session: session_id must be a UUID")
        return task_result("invalid_argument")
    request = forget.session_request(sid, task_id=self.request.id)
    result = _run(self, request, lambda: forget.forget_session(
        self.resources.engine, sid, request=request), {"session_id": session_id})
    if result.get("outcome") == "error":
        return result
    return task_result("forgotten", session_id=str(sid), **result)
