"""The recall-cells task ``eros.cluster_memories`` (contract: name and JSON argument).

One task name, two uses: with a user id it clusters that user; without one (beat, every
RECALL_CELL_INTERVAL_SECS) it finds the users due (docs/recall.md, "Cells") and enqueues one
task per user, and sets the turn sketch centre of any model that needs one
(eros.recall.services.turn_centres). Clustering is idempotent (each pass replaces the user's cells
whole), so a database retry or a redelivery only repeats work.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import CLUSTER_TASK
from eros.core.outcomes import task_result
from eros.recall.services import recall_cells, turn_centres
from eros.tasks.base import ErosTask, describe_database_error

log = logging.getLogger("eros.cells")

#: users enqueued per finder run; the rest are found by the next run.
DUE_PER_RUN = 50


@shared_task(base=ErosTask, bind=True, name=CLUSTER_TASK)
def cluster_memories(self: ErosTask, user_id: str | None = None) -> dict[str, Any]:
    """Cluster one user's memories (JSON argument: the user id as a string), or, with no
    argument, enqueue one such task per user due for (re)clustering."""
    settings = self.settings
    engine = self.resources.engine
    try:
        if user_id is None:
            due = recall_cells.due(engine, settings, DUE_PER_RUN)
            for state in due:
                cluster_memories.apply_async(args=[str(state.user_id)],
                                             queue=settings.eros_consolidate_queue)
            log.info("recall cells: %d users due, enqueued", len(due))
            centred = turn_centres.ensure_centres(  # turn sketch centres (0029, 0030)
                engine, max_seconds=turn_centres.FINDER_SECONDS)
            return {"enqueued": len(due), "turn_models_centred": len(centred)}
        try:
            uid = uuid.UUID(str(user_id))
        except ValueError:
            log.error("cluster_memories: %r is not a user UUID", user_id)
            return task_result("invalid_argument", user_id=user_id)
        return recall_cells.refresh_user(engine, settings, uid).to_dict()
    except DBAPIError as err:
        self.retry_database(err)
        return task_result("database_error", user_id=user_id, error=describe_database_error(err))
