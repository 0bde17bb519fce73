"""The base class of every eros task: the worker process's shared resources and one retry
policy, so each task stays a thin shell around one service call.

Retries go through Celery's own ``Task.retry`` (a new message with a countdown). Two kinds:

- **provider errors** (:class:`~eros.errors.TransientError`) count against an attempt cap kept
  in PostgreSQL (Celery's in-message counter restarts on a redelivery, the database's does
  not); the countdown is :func:`eros.core.retry.decide` with ``Retry-After`` as a floor;
- **database errors** cannot be recorded (the database is what failed): only transient ones
  (connection lost, server shutting down, serialization failure, deadlock) are retried, backing
  off by the message's own retry count up to DREAMING_RETRY_BACKOFF_MAX_SECS; anything else
  (an integrity or programming error) is re-raised for the task to record or fail.

Every countdown is capped below half the claim window and far below the broker's visibility
timeout (``Settings`` checks both at start-up).

Time limits on a green pool: Celery's gevent pool enforces the hard limit (a ``gevent.Timeout``
around the task's greenlet) but ignores the soft one, which prefork delivers as a signal. On a
gevent worker :meth:`ErosTask.__call__` runs the body under ``gevent.Timeout(soft,
SoftTimeLimitExceeded)`` instead, so the tasks' existing SoftTimeLimitExceeded handling (record
the attempt, retry) applies in both pools. A greenlet is only interrupted where it yields (a
socket or database wait, which is where a stuck classification sits).
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar, cast

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from eros.core.green import green_process
from eros.core.outcomes import task_result
from eros.core.retry import RetryPolicy, compute_backoff, is_transient_sqlstate, sqlstate
from eros.db.engine import get_engine
from eros.errors import TransientError
from eros.memory.db import rejected_sql
from eros.ops import metrics
from eros.providers import ChatCompleter, Embedder, make_providers
from eros.settings import Settings
from eros.tasks.args import InvalidArguments, validate
from eros.tasks.broker import broker_countdown

log = logging.getLogger("eros.worker")
T = TypeVar("T")


class Resources:
    """What the tasks of one worker process share, built on first use after the fork."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._shared: dict[Callable[[Resources], Any], Any] = {}

    @property
    def engine(self) -> Engine:
        return get_engine(self.settings)

    @cached_property
    def providers(self) -> tuple[ChatCompleter, Embedder]:
        return make_providers(self.settings)

    @property
    def embedder(self) -> Embedder:
        return self.providers[1]

    def shared(self, factory: Callable[[Resources], T]) -> T:
        """``factory(self)``, built once in this process: a task family's use case (the
        classify pipeline, the consolidator), named by the family's own module so that this
        base class knows none of them."""
        found = self._shared.get(factory)
        if found is None:
            found = self._shared[factory] = factory(self)
        return cast(T, found)


_resources: dict[int, Resources] = {}


def process_resources(settings: Settings) -> Resources:
    """This process's resources (keyed by pid: a forked child never uses its parent's)."""
    pid = os.getpid()
    found = _resources.get(pid)
    if found is None or found.settings is not settings:
        found = _resources[pid] = Resources(settings)
    return found


def forget_resources() -> None:
    """Drop everything inherited from the parent process (called after a fork)."""
    _resources.clear()


class ErosTask(Task):  # type: ignore[misc]
    """Base of every eros task (``shared_task(base=ErosTask, …)``)."""

    ignore_result = True
    #: database outages are retried for as long as they last (with a capped backoff); provider
    #: errors are capped by the attempt counter in PostgreSQL, not by Celery's.
    max_retries = None

    @property
    def settings(self) -> Settings:
        settings: Settings = self.app.eros_settings
        return settings

    @property
    def resources(self) -> Resources:
        return process_resources(self.settings)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Check the arguments (refusing a message that does not fit the task's model), then
        run the body; on a gevent worker, under our own soft time limit (see module doc)."""
        error = self.argument_error(args, kwargs)
        if error is not None:
            return self.refuse(error)
        soft = self.soft_limit() if green_process() else None
        if not soft:
            return super().__call__(*args, **kwargs)
        import gevent

        # The worker's tracer has pushed this message's request already; Task.__call__ would
        # push an empty one over it (Celery's docs call run() from a custom __call__ too).
        with gevent.Timeout(soft, SoftTimeLimitExceeded(f"soft time limit ({soft:g}s) exceeded")):
            return self.run(*args, **kwargs)

    @cached_property
    def _signature(self) -> inspect.Signature:
        """The body's signature, read once per process: ``inspect.signature`` for every
        message was about 2% of a gevent classify worker's CPU."""
        return inspect.signature(self.run)

    def argument_error(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        """What is wrong with a message's arguments (:mod:`eros.tasks.args`), or None. The
        positional ones are bound to their names first, so ``args=[user, persona, "false"]``
        is checked exactly like the same three by name."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as err:  # names only: "missing a required argument: 'user_id'"
            return str(err)
        try:
            validate(self.name, dict(bound.arguments))
        except InvalidArguments as err:
            return str(err)
        return None

    def refuse(self, error: str) -> dict[str, Any]:
        """A malformed message changes nothing: logged and counted, recorded in the dead letter
        (``engine.rejected_tasks``) and answered with the error, never retried."""
        task_id = getattr(self.request, "id", None)
        log.error("%s: message %s refused, invalid arguments: %s", self.name, task_id, error)
        metrics.registry().TASKS_REJECTED.labels(self.name).inc()
        try:
            with self.resources.engine.begin() as conn:
                rejected_sql.record(conn, self.name, task_id, error)
        except DBAPIError as err:  # refused all the same; the log line and the counter remain
            log.error("%s: could not record the refused message %s: %s", self.name, task_id,
                      describe_database_error(err))
        return task_result("invalid_argument", error=error)

    def soft_limit(self) -> float | None:
        """This message's soft limit (``timelimit`` header), else the task's, else the app's."""
        limits = getattr(self.request, "timelimit", None) or (None, None)
        soft = limits[1] if len(limits) > 1 else None
        found = soft or self.soft_time_limit or self.app.conf.task_soft_time_limit
        return float(found) if found else None

    def retry(self, *args: Any, countdown: float | None = None, **kwargs: Any) -> Any:
        """Celery's retry, with a countdown the broker can carry (whole seconds on RabbitMQ:
        :func:`eros.tasks.broker.broker_countdown`)."""
        return super().retry(*args, countdown=broker_countdown(self.settings, countdown),
                             **kwargs)

    def policy(self, max_attempts: int) -> RetryPolicy:
        """The one retry policy; each task family brings its own attempt cap."""
        return RetryPolicy(self.settings.dreaming_retry_backoff_secs,
                           self.settings.dreaming_retry_backoff_max_secs, max_attempts)

    def retry_database(self, err: DBAPIError, *, args: tuple[Any, ...] | None = None,
                       kwargs: dict[str, Any] | None = None) -> None:
        """Raise Celery's Retry for a transient database error: a new message after a backoff
        grown by this message's retry count (an outage backs off instead of hammering the
        server). Return for anything else: retrying an integrity or programming error only
        repeats it, so the caller records it instead.

        ``args``/``kwargs`` replace the message's (None keeps them). Celery's ``retry(kwargs=…)``
        keeps the message's positional args: a task called with ``args=[…]`` that passes only
        kwargs gets them twice, so pass ``args=()`` with every argument in ``kwargs``."""
        if not is_database_transient(err):
            log.error("%s: database error, not retried: %s", self.name,
                      describe_database_error(err))
            return
        attempt = int(self.request.retries or 0) + 1
        countdown = compute_backoff(attempt, base=self.settings.dreaming_retry_backoff_secs,
                                    cap=self.settings.dreaming_retry_backoff_max_secs)
        log.warning("%s: database error (%s); retry %d in %.1fs", self.name,
                    describe_database_error(err), attempt, countdown)
        exc = TransientError(f"database error: {describe_database_error(err)}",
                             provider="database")
        raise self.retry(args=args, kwargs=kwargs, countdown=countdown, exc=exc)


def is_database_transient(err: DBAPIError) -> bool:
    """Lost or refused connections (no SQLSTATE: the server never answered) and the transient
    SQLSTATEs; a client-side error without a SQLSTATE (a bad parameter) is not transient."""
    code = sqlstate(err)
    if code is None:
        return err.connection_invalidated or isinstance(err, OperationalError | InterfaceError)
    return is_transient_sqlstate(code)


def describe_database_error(err: DBAPIError) -> str:
    """The error's class and SQLSTATE: never the statement or its parameters (they may
    carry a person's text)."""
    code = sqlstate(err)
    return type(getattr(err, "orig", None) or err).__name__ + (f" (SQLSTATE {code})" if code
                                                               else "")
