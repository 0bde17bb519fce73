"""Stored task results that hold a person's text (issue 32): ``eros.recall``'s memories and
rendered prompt. Each is kept only EROS_RECALL_RESULT_EXPIRES_SECS and indexed by user (a Redis
set ``eros:results:user:<user_id>`` of task ids, expiring with them), so a forget can delete
that user's results from the result backend at once instead of leaving them readable until
they expire.

Every erasure path purges through :func:`purge_after_erasure`: the ``eros.forget_*`` tasks with
their worker's app, ``eros forget`` and the ledger's erase buttons through
:func:`purge_for_process` (an app built from the process's own settings: REDIS_URL's result
backend)."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from celery import Celery

from eros.privacy.db import erasure_sql

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from eros.settings import Settings

log = logging.getLogger("eros.worker")

INDEX = "eros:results:user:{user_id}"


def _client(app: Celery) -> Any:
    """The result backend's Redis client (REDIS_URL), or None on another backend."""
    return getattr(app.backend, "client", None)


def keep_briefly(app: Celery, user_id: str, task_id: str, ttl: int) -> None:
    """Shorten a stored result's life to ``ttl`` seconds and index it under its user."""
    client = _client(app)
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
    client = _client(app)
    if client is None:
        return 0
    index = INDEX.format(user_id=user_id)
    ids = [m.decode() if isinstance(m, bytes) else str(m) for m in client.smembers(index)]
    keys = [app.backend.get_key_for_task(i) for i in ids]
    removed = int(client.delete(*keys)) if keys else 0
    client.delete(index)
    return removed


def purge_after_erasure(app: Celery, engine: Engine, erasure_id: int | None) -> int | None:
    """Delete the stored recall results (memories, rendered prompts) of the user an erasure
    concerned — found from its ``erasure_log`` row, so a memory, message or session erasure
    purges its owner's too — from ``app``'s result backend: a forget must not leave them
    readable until they expire (issue 32). How many went; None when none could be looked for
    (no erasure, an unknown user, or an error: logged by type only — the results then expire
    within EROS_RECALL_RESULT_EXPIRES_SECS)."""
    if erasure_id is None:
        return None
    try:
        with engine.connect() as conn:
            user = erasure_sql.user_of(conn, erasure_id)
        if user is None:
            return None
        purged = purge_user(app, str(user))
    except Exception as err:
        log.error("erasure %s: stored results not purged (%s); they expire on their own",
                  erasure_id, type(err).__name__)
        return None
    log.info("erasure %s: %d stored recall results purged", erasure_id, purged)
    return purged


def purge_for_process(settings: Settings, engine: Engine, erasure_id: int | None) -> int | None:
    """:func:`purge_after_erasure` from a process that is not a worker (``eros forget``, the
    ledger): through the result backend its settings name (REDIS_URL, as the workers'); None
    when REDIS_URL is unset (no result backend to reach)."""
    if not settings.redis_url:
        return None
    from eros.tasks.app import create_app

    app = create_app(settings)
    try:
        return purge_after_erasure(app, engine, erasure_id)
    finally:
        client = _client(app)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
