"""Forget a user, one relationship, one memory or one chat message (GDPR art. 17, PIPL
art. 47).

One transaction each (see :mod:`eros.privacy.db.forget_sql` for why the statement order makes it
race-free against classification and consolidation in flight), recorded in
``engine.erasure_log`` in that same transaction (:mod:`eros.privacy.services.erasure`) together with
its tombstone: no replay re-learns from the turns the erasure covered. Idempotent: forgetting
again removes nothing more and reports zeros (and logs one more ``done`` row). Results carry
ids and counts, never text.

A failure propagates to the caller, who decides: a task retries a transient database error
and records the rest with :func:`eros.privacy.services.erasure.record_failed`; the CLI records it
and exits non-zero.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine

from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.memory.db import provenance_sql
from eros.privacy.db import consent_sql, forget_session_sql, forget_sql
from eros.privacy.services import erasure


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


def forget_sensitive(engine: Engine, user_id: uuid.UUID, label: str | None = None, *,
                     task_id: str | None = None,
                     request: erasure.Request | None = None,
                     turns: Sequence[int] = ()) -> dict[str, Any]:
    """The user's memories with a special-category label (``label``: one of
    ``eros.core.sensitivity.SENSITIVITY_LABELS``, or None for all of them), each with its
    lineage and derived canonicals, their source turns tombstoned; recorded with scope
    ``sensitive``. A standing choice: the label (every label for None) is recorded
    in ``sensitivity_withheld`` in the same transaction, so the extraction stores no memory
    with it for this user again until :func:`eros.privacy.services.consent.allow_sensitive` lifts it
    (count ``withheld``: labels newly withheld). ``turns``: the user's indexed turns known to
    be about the label though they carry a more sensitive one (a relabel found it), erased
    too. Counts and ``erasure_id``."""
    if label is not None and label not in SENSITIVITY_LABELS:
        raise ValueError(f"unknown sensitivity label {label!r}; expected one of "
                         f"{', '.join(SENSITIVITY_LABELS)}")
    request = request or erasure.Request("sensitive", user_id=user_id, task_id=task_id)
    with erasure.run(engine, request) as e:
        e.counts.update(forget_sql.forget_sensitive(e.conn, user_id, label, turns=turns))
        labels = list(SENSITIVITY_LABELS) if label is None else [label]
        e.counts["withheld"] = consent_sql.withhold(e.conn, user_id, labels, erasure_id=e.id)
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


def message_request(*, task_id: str | None = None) -> erasure.Request:
    """The erasure_log request of a message forget (scope ``message``; the user is filled in
    once the message is found — the log keeps ids and counts, the message's id is not one of
    its columns)."""
    return erasure.Request("message", task_id=task_id)


def forget_message(engine: Engine, message_id: uuid.UUID, *, task_id: str | None = None,
                   request: erasure.Request | None = None) -> dict[str, Any]:
    """One chat message and every memory derived from it: the memories whose
    ``source_seqs`` hold its seq, each with its lineage, erased as ``forget_memory`` erases
    (:func:`eros.privacy.db.forget_sql.erase_memories`: derived canonicals, tombstoned source turns,
    cells), and a classification in flight that may have read the message commits nothing.
    One transaction, recorded in erasure_log; idempotent (an unknown or already erased
    message removes nothing). Counts and ``erasure_id``."""
    request = request or message_request(task_id=task_id)
    with erasure.run(engine, request) as e:
        e.counts.update({"messages": 0, "claims_released": 0, **forget_sql.ZERO_MEMORY_COUNTS})
        message = provenance_sql.find_message(e.conn, message_id)
        if message is not None:
            e.user_id = message.user_id
            # the user's consolidation/cells lock first (as every forget), then the session
            forget_sql.lock_user(e.conn, message.user_id)
            e.counts["claims_released"] = int(provenance_sql.release_if_reading(
                e.conn, message.session_id, message.seq))
            derived = provenance_sql.derived_from(e.conn, message.user_id,
                                                  message.session_id, message.seq)
            lineage = {i for d in derived for i in forget_sql.lineage_ids(e.conn, d)}
            e.counts.update(forget_sql.erase_memories(e.conn, message.user_id,
                                                      sorted(lineage, key=str)))
            e.counts["messages"] = provenance_sql.delete_message(e.conn, message_id)
    return {**e.counts, "erasure_id": e.id}


def session_request(session_id: uuid.UUID, *, task_id: str | None = None) -> erasure.Request:
    """The erasure_log request of a conversation forget (scope ``session``; the user is filled
    in once the session is found)."""
    return erasure.Request("session", session_id=session_id, task_id=task_id)


def forget_session(engine: Engine, session_id: uuid.UUID, *, task_id: str | None = None,
                   request: erasure.Request | None = None) -> dict[str, Any]:
    """One whole conversation: its messages and classification runs, every memory
    learned from it alone (with lineage), and its share of the sources of memories that other
    sessions also support — the rule is :mod:`eros.privacy.db.forget_session_sql`'s. One
    transaction, recorded in erasure_log with scope ``session``; idempotent (an unknown
    session removes nothing). Counts and ``erasure_id``."""
    request = request or session_request(session_id, task_id=task_id)
    with erasure.run(engine, request) as e:
        e.user_id, counts = forget_session_sql.forget_session(e.conn, session_id)
        e.counts.update(counts)
    return {**e.counts, "erasure_id": e.id}
