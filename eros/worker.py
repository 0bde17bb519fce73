"""The Celery app: ``celery -A eros.worker worker|beat`` (contract: this module path).

It builds the app from the environment and imports the task modules, which register the
tasks (``shared_task``) and the worker's signal handlers; nothing else happens at import.
Each feature keeps its own task family (``eros/<feature>/tasks``) over the one base class
:class:`eros.tasks.base.ErosTask`; :mod:`eros.tasks` is the app's wiring.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import concurrency, signals
from sqlalchemy.exc import DBAPIError

import eros.lifecycle  # noqa: F401 - connects the worker's signal handlers
from eros.consolidation.tasks import consolidate_user, find_consolidation_candidates
from eros.core.green import green_process
from eros.dreaming.tasks.classify import (
    claim_and_fan_out,
    claim_idle_sessions,
    classify_session,
    make_pipeline,
)
from eros.dreaming.tasks.screen import screen_unscreened
from eros.errors import ErosError
from eros.guard.core.guard_ngram import load_ngram
from eros.guard.services.guard_model import guard_for, meaning_layer
from eros.privacy.tasks.consent import allow_sensitive, relabel_sensitivity
from eros.privacy.tasks.forget import forget_memory, forget_message, forget_session, forget_user
from eros.privacy.tasks.retention import apply_retention
from eros.recall.tasks.cells import cluster_memories
from eros.recall.tasks.recall import recall_memories
from eros.recall.tasks.reembed import reembed_memories
from eros.settings import get_settings
from eros.tasks.app import create_app

# --pool=gevent (the Procfile's classify worker) runs eros's gevent pool, which keeps its
# prefetched messages waiting in the worker and paces their starts (eros/tasks/green_pool.py);
# Celery resolves the name when the worker starts, after importing this module
concurrency.ALIASES["gevent"] = "eros.tasks.green_pool:TaskPool"

app = create_app(get_settings())
log = logging.getLogger(__name__)


@signals.celeryd_after_setup.connect
def _warm_green_worker(**_: Any) -> None:
    """On a gevent worker, build the classify pipeline, the guard's rules and n-gram model,
    and look its meaning layer up before the consumer starts (after :mod:`eros.lifecycle`
    has trained it, if it had to).

    Why: each was made by the first task that needed it, and a gevent worker starts its first
    tasks all at once: every task whose model reply landed before the first lookup answered
    read the layer's model from the database too (up to 25 in a drain), each of those reads a
    turn of waiting behind the others' CPU, and the rules' compiling held the one thread while
    the replies landed; a quiet drain's whole first wave took 2.5-3.5 s instead of 2.1
    (bench/RESULTS.md, issue 34). A prefork child runs one task at a time and makes them on
    its first. A failure is logged; the tasks make them as before."""
    if not green_process():
        return
    try:
        pipeline = classify_session.resources.shared(make_pipeline)
        guard_for(pipeline.settings)
        load_ngram()
        meaning_layer(pipeline.settings, pipeline.engine, pipeline.embedder)
    except (ErosError, DBAPIError) as err:
        log.warning("memory guard meaning layer not looked up at start-up (%s); the first "
                    "tasks look it up", type(err).__name__)


__all__ = ["allow_sensitive", "app", "apply_retention", "claim_and_fan_out", "claim_idle_sessions",
           "classify_session", "cluster_memories", "consolidate_user",
           "find_consolidation_candidates", "forget_memory", "forget_message", "forget_session",
           "forget_user", "recall_memories", "reembed_memories", "relabel_sensitivity",
           "screen_unscreened"]
