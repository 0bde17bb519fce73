"""Stored task results that hold a person's text: ``eros.recall``'s memories and
rendered prompt. Each is kept only EROS_RECALL_RESULT_EXPIRES_SECS and indexed by user (a Redis
set ``eros:results:user:<user_id>`` of task ids, expiring with them), so a forget can delete
that user's results from the result backend at once instead of leaving them readable until
they expire.

Every erasure path purges through :func:`eros.privacy.tasks.purge.purge_after_erasure`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery import Celery

if TYPE_CHECKING:

    pass

log = logging.getLogger("eros.worker")

INDEX = "eros:results:user:{user_id}"


def backend_client(app: Celery) -> Any:
    """The result backend's Redis client (REDIS_URL), or None on another backend."""
    return getattr(app.backend, "client", None)


def keep_briefly(app: Celery, user_id: str, task_id: str, ttl: int) -> None:
    """Shorten a stored result's life to ``ttl`` seconds and index it under its user."""
    client = backend_client(app)
    if client is None:
        return
    index = INDEX.format(user_id=user_id)
    with client.pipeline() as pipe:
        pipe.expire(app.backend.get_key_for_task(task_id), ttl)
        pipe.sadd(index, task_id)
        pipe.expire(index, ttl)
        pipe.execute()


def purge_user(app: Celery, user_id: str) -> int:
    """Delete every indexed result of the user from the result backend; how many keys went."""
    client = backend_client(app)
    if client is None:
        return 0
    index = INDEX.format(user_id=user_id)
    ids = [m.decode() if isinstance(m, bytes) else str(m) for m in client.smembers(index)]
    keys = [app.backend.get_key_for_task(i) for i in ids]
    removed = int(client.delete(*keys)) if keys else 0
    client.delete(index)
    return removed
