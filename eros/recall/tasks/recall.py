"""The recall task ``eros.recall`` (contract: name and JSON arguments), for callers that
prefer the queue to calling :func:`eros.recall.recall` in-process. The only task that keeps a
result; it runs on its own queue (EROS_RECALL_QUEUE), so a waiting caller is never behind
slow LLM calls."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task

from eros.core.names import DEFAULT_SCOPE, RECALL_TASK
from eros.errors import RecallError
from eros.recall.services.recall import recall
from eros.tasks import results
from eros.tasks.base import ErosTask

log = logging.getLogger("eros.worker")


class RecallTask(ErosTask):
    """A recall result holds the user's memories and prompt: once stored, it is kept only
    EROS_RECALL_RESULT_EXPIRES_SECS and indexed under its user, so a forget can purge it
    (:mod:`eros.tasks.results`). ``after_return`` runs after Celery stored the result."""

    def after_return(self, status: str, retval: Any, task_id: str, args: Any, kwargs: Any,
                     einfo: Any) -> None:
        user_id = kwargs.get("user_id") if kwargs else None
        if user_id is None and args:
            user_id = args[0]
        try:
            user_id = str(uuid.UUID(str(user_id)))
        except ValueError:
            return  # a refused message: its result holds the error only
        try:
            results.keep_briefly(self.app, str(user_id), task_id,
                                 self.settings.eros_recall_result_expires_secs)
        except Exception as err:
            log.error("recall %s: result expiry not shortened (%s)", task_id,
                      type(err).__name__)


@shared_task(base=RecallTask, bind=True, name=RECALL_TASK, ignore_result=False)
def recall_memories(self: ErosTask, user_id: str, query: str, instance_id: str | None = None,
                    strategy: str | None = None, k: int | None = None, scope: str = DEFAULT_SCOPE,
                    include_replaced: bool = False, labels: str | None = None,
                    include_sensitive: bool | None = None) -> dict[str, Any]:
    """``RecallResult.to_dict()`` plus the rendered ``prompt`` (RECALL_LABELS unless
    ``labels``). ``include_sensitive=false`` leaves out special-category memories (default
    RECALL_INCLUDE_SENSITIVE). Invalid arguments come back as ``{"error": ...}``; provider
    errors fail the task — a late recall is useless, so no retry."""
    settings = self.settings
    resources = self.resources
    try:
        result = recall(resources.engine, resources.embedder, user_id, query,
                        instance_id=instance_id, scope=scope,  # type: ignore[arg-type]
                        strategy=strategy, k=k,  # type: ignore[arg-type]
                        include_replaced=include_replaced, settings=settings,
                        include_sensitive=include_sensitive)
        payload = result.to_dict()
        payload["prompt"] = result.render(labels or settings.recall_labels,
                                          dated=settings.recall_render_dates)
    except (RecallError, ValueError) as err:
        log.warning("recall for user %s rejected: %s", user_id, err)
        return {"error": str(err)}
    return payload
