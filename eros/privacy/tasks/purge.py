"""Every erasure purges its user's stored recall results: the ``eros.forget_*``
tasks with their worker's app, ``eros forget`` and the ledger's erase buttons through
:func:`purge_for_process` (an app built from the process's own settings: REDIS_URL's result
backend)."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from celery import Celery

from eros.privacy.db import erasure_sql
from eros.tasks.results import backend_client, purge_user

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from eros.settings import Settings

log = logging.getLogger("eros.worker")


def purge_after_erasure(app: Celery, engine: Engine, erasure_id: int | None) -> int | None:
    """Delete the stored recall results (memories, rendered prompts) of the user an erasure
    concerned — found from its ``erasure_log`` row, so a memory, message or session erasure
    purges its owner's too — from ``app``'s result backend: a forget must not leave them
    readable until they expire. How many went; None when none could be looked for
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
        client = backend_client(app)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
