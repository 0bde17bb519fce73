"""The guard's beat task ``eros.screen_unscreened`` (no arguments): memories written
``unscreened`` while the meaning layer had no model are judged once it has one. Cheap when
there is nothing to do (one probe of a partial index); safe to run twice at once (a row is
settled only while it is still ``unscreened``)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.exc import DBAPIError

from eros.core.names import SCREEN_UNSCREENED_TASK
from eros.core.outcomes import task_result
from eros.dreaming.services.guard_unscreened import settle_unscreened
from eros.dreaming.tasks.classify import make_pipeline
from eros.errors import ErosError
from eros.tasks.base import ErosTask, describe_database_error

log = logging.getLogger("eros.guard")


@shared_task(base=ErosTask, bind=True, name=SCREEN_UNSCREENED_TASK)
def screen_unscreened(self: ErosTask) -> dict[str, Any]:
    """Judge every unscreened memory with the meaning layer's model (nothing while none)."""
    pipeline = self.resources.shared(make_pipeline)
    try:
        return settle_unscreened(self.settings, pipeline.engine, pipeline.embedder,
                                 llm=pipeline.llm).to_dict()
    except DBAPIError as err:
        self.retry_database(err, args=(), kwargs={})
        return task_result("database_error", error=describe_database_error(err))
    except (ErosError, SoftTimeLimitExceeded) as err:  # the next beat run goes on from here
        log.warning("screen_unscreened stopped: %s", type(err).__name__)
        return task_result("stopped", error=type(err).__name__)
