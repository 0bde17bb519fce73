"""The dreaming tasks: ``eros.claim_idle_sessions`` (beat, every DREAMING_TICK_SECS) and
``eros.classify_session`` (one per claimed session). Contract: names and JSON arguments.

Thin: decode the arguments, call :mod:`eros.dreaming.services.classify`, turn its errors into a
retry, a release or a dead letter, each recorded on the session.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from kombu.exceptions import BatchPublishError
from sqlalchemy.exc import DBAPIError

from eros.core.names import CLAIM_TASK, CLASSIFY_TASK
from eros.core.outcomes import task_result
from eros.core.retry import compute_backoff, decide
from eros.dreaming.services.classify import Pipeline, classify, start_attempt
from eros.errors import PermanentError, TransientError
from eros.memory.core.claims import Attempt, Claim, Outcome
from eros.memory.db import repo
from eros.ops import metrics
from eros.prompts import load_prompt
from eros.providers.ratelimit import Throttled, make_limiter
from eros.tasks.base import ErosTask, Resources, describe_database_error

log = logging.getLogger("eros.worker")


def make_pipeline(resources: Resources) -> Pipeline:
    """Classification: extraction model, embedder, prompt and the global limits (one per
    worker process, shared by its tasks)."""
    settings = resources.settings
    llm, embedder = resources.providers
    return Pipeline(settings, resources.engine, llm, embedder,
                    load_prompt(settings.dreaming_prompt_file, settings.dreaming_prompt_version),
                    make_limiter(settings))


@shared_task(base=ErosTask, bind=True, name=CLAIM_TASK)
def claim_idle_sessions(self: ErosTask, batch: int | None = None) -> int:
    """Claim idle sessions with one SKIP LOCKED statement and fan out one classify each."""
    if self.settings.dreaming_disabled:
        log.info("dreaming disabled (DREAMING_DISABLED); not claiming")
        return 0
    return len(claim_and_fan_out(batch, task=self))


def claim_and_fan_out(batch: int | None = None, *, task: ErosTask | None = None) -> list[Claim]:
    """The claim task's body, also run in-process by ``eros sweep`` (which needs the claims
    to follow them): one SKIP LOCKED claim, then one classify message per claimed session."""
    task = task or claim_idle_sessions
    settings = task.settings
    stale = settings.dreaming_claim_stale_secs
    with task.resources.engine.begin() as conn:
        # Backpressure: top the claimed-but-unfinished count up to the ceiling, no further.
        claims, in_flight = repo.claim_within_ceiling(
            conn, ceiling=settings.dreaming_max_in_flight,
            batch=batch or settings.dreaming_batch,
            idle_secs=settings.dreaming_idle_secs, stale_secs=stale)
    want = min(batch or settings.dreaming_batch, settings.dreaming_max_in_flight - in_flight)
    metrics.registry().CLAIM_TICKS.labels("full" if want <= 0 else "claimed").inc()
    metrics.registry().CLAIM_BATCH.observe(len(claims))
    metrics.registry().CLAIMED.inc(len(claims))
    if want <= 0:
        log.info("not claiming: %d sessions already in flight (DREAMING_MAX_IN_FLIGHT=%d)",
                 in_flight, settings.dreaming_max_in_flight)
    if claims:
        _fan_out(claims, settings.eros_classify_queue)
    log.info("claimed %d idle sessions", len(claims))
    return claims


def _fan_out(claims: list[Claim], queue: str) -> None:
    """One classify message per claim, through one producer (and broker connection).

    On Redis the messages go out as one pipeline (kombu's ``Producer.batch``): one round trip
    for the tick's batch instead of one LPUSH each (the claim worker's CPU went mostly to
    those round trips, bench/RESULTS.md issue 34). RabbitMQ publishes each at once, as before.
    kombu never re-sends a failed pipeline (some of it may have landed); here the tick's
    messages are then sent again one by one, with kombu's usual retries: a message that
    arrives twice is harmless, its second delivery finds the claim finished or taken and
    writes nothing (the claim token's fence)."""
    messages = [([str(c.session_id)], {"claim_token": str(c.token)}) for c in claims]
    with classify_session.app.producer_or_acquire() as producer:
        try:
            with producer.batch(max_size=len(messages)):
                _publish(producer, messages, queue)
            return
        except BatchPublishError as err:
            log.warning("claim: the batch of %d classify messages may not have reached the "
                        "broker (%s); sending them one by one", len(messages),
                        type(err.__cause__ or err).__name__)
        _publish(producer, messages, queue)


def _publish(producer: Any, messages: list[tuple[list[str], dict[str, str]]],
             queue: str) -> None:
    for args, kwargs in messages:
        classify_session.apply_async(args=args, kwargs=kwargs, queue=queue, producer=producer)


@shared_task(base=ErosTask, bind=True, name=CLASSIFY_TASK)
def classify_session(self: ErosTask, session_id: str, claim_token: str | None = None,
                     force: bool = False) -> dict[str, Any]:
    """Classify one session. Without ``claim_token`` (a shell call) it takes the claim itself
    and skips a session already classified or claimed elsewhere, unless ``force``."""
    try:
        sid = uuid.UUID(str(session_id))
        token = uuid.UUID(claim_token) if claim_token else None
    except ValueError:
        log.error("classify_session: %r is not a session UUID", session_id)
        return task_result("invalid_argument", session_id=session_id)
    settings = self.settings
    p = self.resources.shared(make_pipeline)
    try:
        if token is None:
            with p.engine.begin() as conn:
                claim = repo.claim_one(conn, sid, stale_secs=settings.dreaming_claim_stale_secs,
                                       force=force)
            if claim is None:
                log.info("session %s skipped: classified, dead-lettered, missing or claimed "
                         "elsewhere (use force=true to re-run)", sid)
                return task_result("skipped", session_id=session_id)
            token = claim.token
        attempt = start_attempt(p, sid, token)
    except DBAPIError as err:
        self.retry_database(err, kwargs=_retry_kwargs(token, force))
        # not transient, and no attempt to record it on: the claim goes stale and is retaken
        return task_result("database_error", session_id=session_id,
                           error=describe_database_error(err))
    if attempt is None:
        log.info("session %s: claim no longer ours; another worker has it", sid)
        return task_result("claim_lost", session_id=session_id)
    if attempt.attempt > settings.dreaming_max_attempts:
        return _dead_letter(p, attempt, self.request.id, "attempt cap reached")
    try:
        report = classify(p, attempt, task_id=self.request.id)
    except Throttled as err:
        return _throttled(self, p, attempt, err, force)
    except TransientError as err:
        return _retry_or_dead_letter(self, p, attempt, err, force)
    except SoftTimeLimitExceeded:
        timeout = TransientError("attempt exceeded its soft time limit", provider="worker")
        return _retry_or_dead_letter(self, p, attempt, timeout, force)
    except PermanentError as err:
        return _permanent(self, p, attempt, err)
    except DBAPIError as err:
        self.retry_database(err, kwargs=_retry_kwargs(token, force))
        # not an outage: the same statement would fail again; record it like a rejection
        error = PermanentError(f"database error: {describe_database_error(err)}",
                               provider="database")
        return _permanent(self, p, attempt, error)
    return task_result(report.outcome, session_id=session_id,
                       memories=report.memories_written, attempt=attempt.attempt)


def _retry_kwargs(token: uuid.UUID | None, force: bool) -> dict[str, Any]:
    """The next message keeps the claim this one took (or was given)."""
    return {"claim_token": str(token) if token else None, "force": force}


def _retry_or_dead_letter(task: ErosTask, p: Pipeline, attempt: Attempt, err: TransientError,
                          force: bool) -> dict[str, Any]:
    settings = task.settings
    sid = str(attempt.claim.session_id)
    decision = decide(task.policy(settings.dreaming_max_attempts), attempt.attempt,
                      err.retry_after)
    if not decision.retry:
        return _dead_letter(p, attempt, task.request.id, f"{decision.reason}; last: {err}")
    with p.engine.begin() as conn:
        alive = repo.record_retry(conn, attempt, Outcome("retrying", error=str(err)),
                                  task.request.id)
    if not alive:
        return task_result("claim_lost", session_id=sid)
    metrics.registry().RETRIES.labels(err.provider).inc()
    metrics.registry().OUTCOMES.labels("retrying").inc()
    log.warning("session %s: transient %s error (%s); retry in %.1fs, %s", sid, err.provider,
                err, decision.countdown, decision.reason)
    raise task.retry(args=[sid], kwargs=_retry_kwargs(attempt.claim.token, force),
                     countdown=decision.countdown, exc=err)


def _throttled(task: ErosTask, p: Pipeline, attempt: Attempt, err: Throttled,
               force: bool) -> dict[str, Any]:
    """Wait for a global limit without holding the slot and without spending an attempt."""
    sid = str(attempt.claim.session_id)
    with p.engine.begin() as conn:
        alive = repo.record_throttled(conn, attempt)
    if not alive:
        return task_result("claim_lost", session_id=sid)
    metrics.registry().THROTTLED.labels(err.resource).inc()
    # jittered within [wait, 1.5 × wait] so throttled replicas do not come back in step
    wait = max(err.wait, 0.1)
    countdown = compute_backoff(1, base=wait * 1.5, retry_after=wait,
                                cap=min(wait * 1.5, task.settings.dreaming_retry_backoff_max_secs))
    log.info("session %s throttled by %s; rescheduled in %.1fs", sid, err.resource, countdown)
    raise task.retry(args=[sid], kwargs=_retry_kwargs(attempt.claim.token, force),
                     countdown=countdown, exc=err)


def _permanent(task: ErosTask, p: Pipeline, attempt: Attempt,
               err: PermanentError) -> dict[str, Any]:
    settings = task.settings
    sid = str(attempt.claim.session_id)
    log.error("session %s: permanent %s error, not retried now: %s", sid, err.provider, err)
    metrics.registry().OUTCOMES.labels("permanent_error").inc()
    if attempt.attempt >= settings.dreaming_max_attempts:
        return _dead_letter(p, attempt, task.request.id, f"permanent error: {err}")
    with p.engine.begin() as conn:
        repo.release(conn, attempt, Outcome("permanent_error", error=str(err)),
                     delay_secs=settings.dreaming_claim_stale_secs, task_id=task.request.id)
    return task_result("permanent_error", session_id=sid, error=str(err))


def _dead_letter(p: Pipeline, attempt: Attempt, task_id: str | None,
                 reason: str) -> dict[str, Any]:
    sid = str(attempt.claim.session_id)
    with p.engine.begin() as conn:
        repo.dead_letter(conn, attempt, Outcome("dead_letter", error=reason[:2000]), task_id)
    metrics.registry().DEAD_LETTERS.inc()
    metrics.registry().OUTCOMES.labels("dead_letter").inc()
    log.error("session %s dead-lettered after %d attempts: %s", sid, attempt.attempt, reason)
    return task_result("dead_letter", session_id=sid, error=reason)
