"""Forget a user, one relationship or one memory (GDPR art. 17, PIPL art. 47).

One transaction each (see :mod:`eros.db.forget_sql` for why the statement order makes it
race-free against classification and consolidation in flight), recorded in
``engine.erasure_log`` in that same transaction (:mod:`eros.services.erasure`) together with
its tombstone: no replay re-learns from the turns the erasure covered. Idempotent: forgetting
again removes nothing more and reports zeros (and logs one more ``done`` row). Results carry
ids and counts, never text.

A failure propagates to the caller, who decides: a task retries a transient database error
and records the rest with :func:`eros.services.erasure.record_failed`; the CLI records it
and exits non-zero.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Engine

from eros.db import forget_sql
from eros.services import erasure


def user_request(user_id: uuid.UUID, *, instance_id: uuid.UUID | None = None,
                 task_id: str | None = None) -> erasure.Request:
    """The erasure_log request of a user (scope ``user``) or persona (``persona``) forget."""
    return erasure.Request("persona" if instance_id else "user", user_id=user_id,
                           instance_id=instance_id, task_id=task_id)


def memory_request(memory_id: uuid.UUID, *, task_id: str | None = None) -> erasure.Request:
    return erasure.Request("memory", memory_id=memory_id, task_id=task_id)


def forget_user(engine: Engine, user_id: uuid.UUID, *, instance_id: uuid.UUID | None = None,
                sessions: bool = False, task_id: str | None = None,
                request: erasure.Request | None = None) -> dict[str, Any]:
    """Every memory of the user (or, with ``instance_id``, that persona's relationship layer),
    its lineage and bookkeeping; sessions marked read (and their turns tombstoned), or deleted
    with ``sessions``. Returns the counts and the erasure_log row's ``erasure_id``."""
    request = request or user_request(user_id, instance_id=instance_id, task_id=task_id)
    with erasure.run(engine, request) as e:
        e.counts.update(forget_sql.forget_user(e.conn, user_id, instance_id=instance_id,
                                               sessions=sessions))
    return {**e.counts, "erasure_id": e.id}


def forget_memory(engine: Engine, memory_id: uuid.UUID, *, task_id: str | None = None,
                  request: erasure.Request | None = None) -> dict[str, Any]:
    """One memory, its lineage and the canonicals derived from it; its source turns are
    tombstoned; recall never returns them again. Counts and ``erasure_id``."""
    request = request or memory_request(memory_id, task_id=task_id)
    with erasure.run(engine, request) as e:
        e.user_id, counts = forget_sql.forget_memory(e.conn, memory_id)
        e.counts.update(counts)
    return {**e.counts, "erasure_id": e.id}
