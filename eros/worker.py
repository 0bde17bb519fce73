"""The Celery app: ``celery -A eros.worker worker|beat`` (contract: this module path).

It builds the app from the environment and imports the task modules, which register the
tasks (``shared_task``) and the worker's signal handlers; nothing else happens at import.
Each feature keeps its own task family (``eros/<feature>/tasks``) over the one base class
:class:`eros.tasks.base.ErosTask`; :mod:`eros.tasks` is the app's wiring.
"""

from __future__ import annotations

from celery import concurrency

import eros.lifecycle  # noqa: F401 - connects the worker's signal handlers
from eros.consolidation.tasks import consolidate_user, find_consolidation_candidates
from eros.dreaming.tasks.classify import claim_and_fan_out, claim_idle_sessions, classify_session
from eros.dreaming.tasks.screen import screen_unscreened
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

__all__ = ["allow_sensitive", "app", "apply_retention", "claim_and_fan_out", "claim_idle_sessions",
           "classify_session", "cluster_memories", "consolidate_user",
           "find_consolidation_candidates", "forget_memory", "forget_message", "forget_session",
           "forget_user", "recall_memories", "reembed_memories", "relabel_sensitivity",
           "screen_unscreened"]
