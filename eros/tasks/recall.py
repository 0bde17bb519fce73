"""The recall task ``eros.recall`` (contract: name and JSON arguments), for callers that
prefer the queue to calling :func:`eros.recall.recall` in-process. The only task that keeps a
result; it runs on its own queue (EROS_RECALL_QUEUE), so a waiting caller is never behind
slow LLM calls."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from eros.core.names import RECALL_TASK
from eros.errors import RecallError
from eros.services.recall import recall
from eros.tasks.base import ErosTask

log = logging.getLogger("eros.worker")


@shared_task(base=ErosTask, bind=True, name=RECALL_TASK, ignore_result=False)
def recall_memories(self: ErosTask, user_id: str, query: str, instance_id: str | None = None,
                    strategy: str | None = None, k: int | None = None, scope: str = "both",
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
