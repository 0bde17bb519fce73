"""Recording erasures: every erasure — ``forget`` of a user, a persona, a memory,
a user's sensitive memories (``--sensitive``) or one message (``--message``) — runs in one
transaction through :func:`run`, which writes its ``engine.erasure_log`` row (status
``done``, counts per table) in that same transaction; a request that fails for good is
recorded with :func:`record_failed` (status ``failed``, an error code, never a message) and
counted in ``eros_erasures_failed_total``.

Usage (a new kind of erasure)::

    request = erasure.Request("sensitive", user_id=user, task_id=task_id)
    try:
        with erasure.run(engine, request) as e:
            e.counts["memories"] = delete_them(e.conn, ...)
    except Exception as err:
        erasure.record_failed(engine, request, err)   # unless a retry will follow
        raise
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from eros.core.erasure import Scope, error_code
from eros.ops import metrics
from eros.privacy.db import erasure_sql

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Request:
    """One erasure request: what, for whom, and which task asked (ids only)."""

    scope: Scope
    user_id: uuid.UUID | None = None
    instance_id: uuid.UUID | None = None
    memory_id: uuid.UUID | None = None
    task_id: str | None = None
    requested_at: datetime = field(default_factory=_now)
    #: the conversation of a ``session`` erasure.
    session_id: uuid.UUID | None = None


@dataclass
class Erasure:
    """An erasure in progress: its transaction, its log row's id, and what it removed."""

    conn: Connection
    id: int
    request: Request
    counts: dict[str, int] = field(default_factory=dict)
    #: the user, when the request named only a memory (filled in by the erasure).
    user_id: uuid.UUID | None = None


@contextmanager
def run(engine: Engine, request: Request) -> Iterator[Erasure]:
    """One transaction: the erasure's statements and its ``done`` log row commit together.
    On an exception everything rolls back and nothing is recorded here: the caller decides
    whether a retry follows or :func:`record_failed`."""
    with engine.begin() as conn:
        erasure_id = erasure_sql.begin(
            conn, scope=request.scope, user_id=request.user_id,
            instance_id=request.instance_id, memory_id=request.memory_id,
            task_id=request.task_id, requested_at=request.requested_at,
            session_id=request.session_id)
        e = Erasure(conn, erasure_id, request)
        yield e
        erasure_sql.complete(conn, erasure_id, e.counts, user_id=e.user_id)
    metrics.record_erasure(request.scope)
    log.info("erasure %d done: scope=%s user=%s%s%s%s %s", erasure_id, request.scope,
             request.user_id or e.user_id,
             f" persona={request.instance_id}" if request.instance_id else "",
             f" memory={request.memory_id}" if request.memory_id else "",
             f" session={request.session_id}" if request.session_id else "",
             " ".join(f"{k}={v}" for k, v in sorted(e.counts.items())))


def record_failed(engine: Engine, request: Request, err: BaseException) -> int | None:
    """Record a request that failed for good (status ``failed``, an error code), count it in
    ``eros_erasures_failed_total``; the log row's id, or None when even that could not be
    written (the database is down: the metric and the ERROR line remain)."""
    code = error_code(err)
    metrics.record_erasure(request.scope, failed=True)
    log.error("erasure failed: scope=%s user=%s%s%s error=%s", request.scope, request.user_id,
              f" persona={request.instance_id}" if request.instance_id else "",
              f" memory={request.memory_id}" if request.memory_id else "", code)
    try:
        with engine.begin() as conn:
            return erasure_sql.record(
                conn, scope=request.scope, status="failed", user_id=request.user_id,
                instance_id=request.instance_id, memory_id=request.memory_id,
                task_id=request.task_id, error_code=code, requested_at=request.requested_at,
                session_id=request.session_id)
    except DBAPIError as again:
        log.error("could not record the failed erasure: %s", error_code(again))
        return None
