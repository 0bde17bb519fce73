"""The recall-cells task (``eros.cluster_memories``), registered on the app of
:mod:`eros.worker`, which imports this module at its end.

One task name, two uses: with a user id it clusters that user; without one (beat, every
RECALL_CELL_INTERVAL_SECS) it finds the users due (docs/recall.md, "Cells") and enqueues one
task per user. Database errors are retried by Celery's own backoff: clustering is idempotent
(each pass replaces the user's cells whole), so a retry or a redelivery only repeats work.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy.exc import OperationalError

from eros.celery_app import CLUSTER_TASK
from eros.db.engine import get_engine
from eros.service import recall_cells
from eros.worker import app, settings

log = logging.getLogger("eros.cells")

#: users enqueued per finder run; the rest are found by the next run.
DUE_PER_RUN = 50


@app.task(name=CLUSTER_TASK, ignore_result=True, autoretry_for=(OperationalError,),
          retry_backoff=settings.dreaming_retry_backoff_secs,
          retry_backoff_max=settings.dreaming_retry_backoff_max_secs, retry_jitter=True,
          max_retries=5)
def cluster_memories(user_id: str | None = None) -> dict[str, Any]:
    """Cluster one user's memories (JSON argument: the user id as a string), or, with no
    argument, enqueue one such task per user due for (re)clustering."""
    engine = get_engine(settings)
    if user_id is None:
        due = recall_cells.due(engine, settings, DUE_PER_RUN)
        for state in due:
            cluster_memories.apply_async(args=[str(state.user_id)],
                                         queue=settings.eros_consolidate_queue)
        log.info("recall cells: %d users due, enqueued", len(due))
        return {"enqueued": len(due)}
    try:
        uid = uuid.UUID(str(user_id))
    except ValueError:
        log.error("cluster_memories: %r is not a user UUID", user_id)
        return {"user_id": user_id, "outcome": "invalid_argument"}
    return recall_cells.refresh_user(engine, settings, uid).to_dict()
