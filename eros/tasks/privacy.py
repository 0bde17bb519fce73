"""The erasure tasks (issue 14): ``eros.forget_user`` and ``eros.forget_memory``. Contract:
names and JSON arguments. Both keep their result (counts and ids, never text) so the product
can confirm the erasure; both are idempotent, so a redelivery or a retry is harmless."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import FORGET_MEMORY_TASK, FORGET_MESSAGE_TASK, FORGET_USER_TASK
from eros.services import forget
from eros.tasks.base import ErosTask, describe_database_error

log = logging.getLogger("eros.worker")


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


@shared_task(base=ErosTask, bind=True, name=FORGET_USER_TASK, ignore_result=False)
def forget_user(self: ErosTask, user_id: str, instance_id: str | None = None,
                sessions: bool = False) -> dict[str, Any]:
    """Forget a user (``instance_id`` null) or one relationship; counts of what was removed."""
    uid = _uuid(user_id)
    iid = _uuid(instance_id) if instance_id is not None else None
    if uid is None or (instance_id is not None and iid is None):
        log.error("forget_user: user_id/instance_id must be UUIDs")
        return {"outcome": "invalid_argument"}
    try:
        counts = forget.forget_user(self.resources.engine, uid, instance_id=iid,
                                    sessions=bool(sessions))
    except DBAPIError as err:
        self.retry_database(err, kwargs={"instance_id": instance_id, "sessions": sessions})
        return {"outcome": "error", "error": describe_database_error(err)}
    return {"outcome": "forgotten", "user_id": str(uid),
            "instance_id": str(iid) if iid else None, **counts}


@shared_task(base=ErosTask, bind=True, name=FORGET_MEMORY_TASK, ignore_result=False)
def forget_memory(self: ErosTask, memory_id: str) -> dict[str, Any]:
    """Forget one memory and its lineage; counts of what was removed."""
    mid = _uuid(memory_id)
    if mid is None:
        log.error("forget_memory: memory_id must be a UUID")
        return {"outcome": "invalid_argument"}
    try:
        counts = forget.forget_memory(self.resources.engine, mid)
    except DBAPIError as err:
        self.retry_database(err)
        return {"outcome": "error", "error": describe_database_error(err)}
    return {"outcome": "forgotten", "memory_id": str(mid), **counts}


@shared_task(base=ErosTask, bind=True, name=FORGET_MESSAGE_TASK, ignore_result=False)
def forget_message(self: ErosTask, message_id: str) -> dict[str, Any]:
    """Erase one chat message (``chat_messages.id``) and every memory derived from it."""
    mid = _uuid(message_id)
    if mid is None:
        log.error("forget_message: message_id must be a UUID")
        return {"outcome": "invalid_argument"}
    try:
        counts = forget.forget_message(self.resources.engine, mid)
    except DBAPIError as err:
        self.retry_database(err)
        return {"outcome": "error", "error": describe_database_error(err)}
    return {"outcome": "forgotten", "message_id": str(mid), **counts}
