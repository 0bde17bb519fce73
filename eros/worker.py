"""The Celery app (``celery -A eros.worker worker|beat``) and its two thin tasks.

Tasks decode arguments, call a service function and turn errors into retries or records.
Contract: task names ``eros.claim_idle_sessions`` and ``eros.classify_session``, JSON arguments.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

from celery import Task, signals
from celery.exceptions import Retry, SoftTimeLimitExceeded
from sqlalchemy.exc import DBAPIError, OperationalError

from eros import logs, metrics
from eros.celery_app import CLAIM_TASK, CLASSIFY_TASK, RECALL_TASK, create_app
from eros.core.prompts import load_prompt
from eros.core.retry import RetryPolicy, compute_backoff, decide
from eros.db import repo
from eros.db.engine import check_database, dispose_all, get_engine
from eros.db.repo import Attempt, Claim, Outcome
from eros.errors import ErosError, PermanentError, TransientError
from eros.providers import make_providers
from eros.ratelimit import Throttled, make_limiter
from eros.service.classify import Pipeline, classify, start_attempt
from eros.settings import get_settings

log = logging.getLogger("eros.worker")


settings = get_settings()
app = create_app(settings)
_pipelines: dict[int, Pipeline] = {}


@signals.worker_process_init.connect
def _after_fork(**_: Any) -> None:
    """Pools are per process: drop anything inherited from the parent."""
    dispose_all()
    _pipelines.clear()


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _structured_logs(logger: logging.Logger, **_: Any) -> None:
    logs.install(logger, settings.eros_log_format, settings.eros_log_level)


@signals.worker_init.connect
def _start_checks(**_: Any) -> None:
    """Refuse to start against an unreachable or unmigrated database, or a vector column of
    another size than EMBEDDING_DIM: failing loudly at start beats failing every task."""
    try:
        check_database(get_engine(settings), settings)
    except ErosError as err:
        log.critical("eros worker cannot start: %s", err)
        raise SystemExit(f"eros: error: {err}") from None
    # Building the providers here announces them in the log once, and imports the provider
    # SDKs before the pool forks, so children inherit them. Otherwise every prefork child
    # imports openai and voyageai on its first task (about 1.5 s of CPU each): a 16-process
    # pool on 2 cores spends its first ~15 s importing (measured by bench/drain_bench.py).
    make_providers(settings)
    if settings.eros_metrics_port:
        metrics.serve(settings.eros_metrics_port, get_engine(settings), settings)


@signals.worker_process_shutdown.connect
def _forget_process(pid: int | None = None, **_: Any) -> None:
    metrics.process_exited(pid or os.getpid())


def pipeline() -> Pipeline:
    pid = os.getpid()
    if pid not in _pipelines:
        llm, embedder = make_providers(settings)
        _pipelines[pid] = Pipeline(settings, get_engine(settings), llm, embedder,
                                   load_prompt(settings.dreaming_prompt_file),
                                   make_limiter(settings))
    return _pipelines[pid]


def _policy() -> RetryPolicy:
    return RetryPolicy(settings.dreaming_retry_backoff_secs,
                       settings.dreaming_retry_backoff_max_secs, settings.dreaming_max_attempts)


@app.task(name=CLAIM_TASK, ignore_result=True)
def claim_idle_sessions(batch: int | None = None) -> int:
    """Claim idle sessions with one SKIP LOCKED statement and fan out one classify each."""
    if settings.dreaming_disabled:
        log.info("dreaming disabled (DREAMING_DISABLED); not claiming")
        return 0
    return len(claim_and_fan_out(batch))


def claim_and_fan_out(batch: int | None = None) -> list[Claim]:
    """The claim task's body, also run in-process by ``eros sweep`` (which needs the claims
    to follow them): one SKIP LOCKED claim, then one classify message per claimed session."""
    engine = pipeline().engine
    stale = settings.dreaming_claim_stale_secs
    with engine.begin() as conn:
        # Backpressure: top the claimed-but-unfinished count up to the ceiling, no further.
        room = settings.dreaming_max_in_flight - repo.count_in_flight(conn, stale_secs=stale)
        want = min(batch or settings.dreaming_batch, room)
        claims = [] if want <= 0 else repo.claim_idle(
            conn, idle_secs=settings.dreaming_idle_secs, stale_secs=stale, batch=want)
    metrics.CLAIM_TICKS.labels("full" if want <= 0 else "claimed").inc()
    metrics.CLAIM_BATCH.observe(len(claims))
    metrics.CLAIMED.inc(len(claims))
    if want <= 0:
        log.info("not claiming: %d sessions already in flight (DREAMING_MAX_IN_FLIGHT=%d)",
                 settings.dreaming_max_in_flight - room, settings.dreaming_max_in_flight)
    for claim in claims:
        classify_session.apply_async(
            args=[str(claim.session_id)], kwargs={"claim_token": str(claim.token)},
            queue=settings.eros_classify_queue)
    log.info("claimed %d idle sessions", len(claims))
    return claims


@app.task(name=CLASSIFY_TASK, bind=True, ignore_result=True, max_retries=None)
def classify_session(self: Task, session_id: str, claim_token: str | None = None,
                     force: bool = False) -> dict[str, Any]:
    """Classify one session. Without ``claim_token`` (a shell call) it takes the claim itself
    and skips a session already classified or claimed elsewhere, unless ``force``."""
    try:
        sid = uuid.UUID(str(session_id))
        token = uuid.UUID(claim_token) if claim_token else None
    except ValueError:
        log.error("classify_session: %r is not a session UUID", session_id)
        return {"session_id": session_id, "outcome": "invalid_argument"}
    p = pipeline()
    try:
        if token is None:
            with p.engine.begin() as conn:
                claim = repo.claim_one(conn, sid, stale_secs=settings.dreaming_claim_stale_secs,
                                       force=force)
            if claim is None:
                log.info("session %s skipped: classified, dead-lettered, missing or claimed "
                         "elsewhere (use force=true to re-run)", sid)
                return {"session_id": session_id, "outcome": "skipped"}
            token = claim.token
        attempt = start_attempt(p, sid, token)
    except (OperationalError, DBAPIError) as err:
        raise _db_retry(self, err, session_id, token) from None
    if attempt is None:
        log.info("session %s: claim no longer ours; another worker has it", sid)
        return {"session_id": session_id, "outcome": "claim_lost"}
    if attempt.attempt > settings.dreaming_max_attempts:
        return _dead_letter(p, attempt, self.request.id, "attempt cap reached")
    retry_kwargs = {"claim_token": str(token), "force": force}
    try:
        report = classify(p, attempt, task_id=self.request.id)
    except Throttled as err:
        return _throttled(self, p, attempt, err, retry_kwargs)
    except TransientError as err:
        return _retry_or_dead_letter(self, p, attempt, err, retry_kwargs)
    except SoftTimeLimitExceeded:
        timeout = TransientError("attempt exceeded its soft time limit", provider="worker")
        return _retry_or_dead_letter(self, p, attempt, timeout, retry_kwargs)
    except PermanentError as err:
        return _permanent(p, attempt, err, self.request.id)
    except (OperationalError, DBAPIError) as err:
        raise _db_retry(self, err, session_id, token, attempt.attempt, force) from None
    return {"session_id": session_id, "outcome": report.outcome,
            "memories": report.memories_written, "attempt": attempt.attempt}


def _retry_or_dead_letter(task: Task, p: Pipeline, attempt: Attempt, err: TransientError,
                          retry_kwargs: dict[str, Any]) -> dict[str, Any]:
    sid = str(attempt.claim.session_id)
    decision = decide(_policy(), attempt.attempt, err.retry_after)
    if not decision.retry:
        return _dead_letter(p, attempt, task.request.id, f"{decision.reason}; last: {err}")
    with p.engine.begin() as conn:
        alive = repo.record_retry(conn, attempt, Outcome("retrying", error=str(err)),
                                  task.request.id)
    if not alive:
        return {"session_id": sid, "outcome": "claim_lost"}
    metrics.RETRIES.labels(err.provider).inc()
    metrics.OUTCOMES.labels("retrying").inc()
    log.warning("session %s: transient %s error (%s); retry in %.1fs, %s", sid, err.provider,
                err, decision.countdown, decision.reason)
    raise task.retry(args=[sid], kwargs=retry_kwargs, countdown=decision.countdown, exc=err)


def _throttled(task: Task, p: Pipeline, attempt: Attempt, err: Throttled,
               retry_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Wait for a global limit without holding the slot and without spending an attempt."""
    sid = str(attempt.claim.session_id)
    with p.engine.begin() as conn:
        alive = repo.record_throttled(conn, attempt)
    if not alive:
        return {"session_id": sid, "outcome": "claim_lost"}
    metrics.THROTTLED.labels(err.resource).inc()
    # jittered within [wait, 1.5 × wait] so throttled replicas do not come back in step
    wait = max(err.wait, 0.1)
    countdown = compute_backoff(1, base=wait * 1.5, retry_after=wait,
                                cap=min(wait * 1.5, settings.dreaming_retry_backoff_max_secs))
    log.info("session %s throttled by %s; rescheduled in %.1fs", sid, err.resource, countdown)
    raise task.retry(args=[sid], kwargs=retry_kwargs, countdown=countdown, exc=err)


def _permanent(p: Pipeline, attempt: Attempt, err: PermanentError,
               task_id: str | None) -> dict[str, Any]:
    sid = str(attempt.claim.session_id)
    log.error("session %s: permanent %s error, not retried now: %s", sid, err.provider, err)
    metrics.OUTCOMES.labels("permanent_error").inc()
    if attempt.attempt >= settings.dreaming_max_attempts:
        return _dead_letter(p, attempt, task_id, f"permanent error: {err}")
    with p.engine.begin() as conn:
        repo.release(conn, attempt, Outcome("permanent_error", error=str(err)),
                     delay_secs=settings.dreaming_claim_stale_secs, task_id=task_id)
    return {"session_id": sid, "outcome": "permanent_error", "error": str(err)}


def _dead_letter(p: Pipeline, attempt: Attempt, task_id: str | None,
                 reason: str) -> dict[str, Any]:
    sid = str(attempt.claim.session_id)
    with p.engine.begin() as conn:
        repo.dead_letter(conn, attempt, Outcome("dead_letter", error=reason[:2000]), task_id)
    metrics.DEAD_LETTERS.inc()
    metrics.OUTCOMES.labels("dead_letter").inc()
    log.error("session %s dead-lettered after %d attempts: %s", sid, attempt.attempt, reason)
    return {"session_id": sid, "outcome": "dead_letter", "error": reason}


def _db_retry(task: Task, err: Exception, session_id: str, token: uuid.UUID | None,
              attempt: int = 1, force: bool = False) -> Retry:
    """The database itself is unreachable: retry with backoff, nothing can be recorded."""
    countdown = compute_backoff(attempt, base=settings.dreaming_retry_backoff_secs,
                                cap=settings.dreaming_retry_backoff_max_secs)
    log.warning("session %s: database error (%s); retry in %.1fs", session_id,
                type(err).__name__, countdown)
    kwargs = {"claim_token": str(token) if token else None, "force": force}
    return task.retry(args=[session_id], kwargs=kwargs, countdown=countdown,
                      exc=TransientError(f"database error: {type(err).__name__}",
                                         provider="database"))


# The consolidation tasks register themselves on ``app`` (kept in their own module).
from eros import cell_tasks as _cell_tasks  # noqa: E402,F401
from eros import consolidation_tasks as _consolidation_tasks  # noqa: E402,F401

# --- recall (issue 5, docs/recall.md) -------------------------------------------------------


@app.task(name=RECALL_TASK, ignore_result=False)
def recall_memories(user_id: str, query: str, instance_id: str | None = None,
                    strategy: str | None = None, k: int | None = None, scope: str = "both",
                    include_replaced: bool = False, labels: str | None = None
                    ) -> dict[str, Any]:
    """Recall for callers that prefer the queue: ``RecallResult.to_dict()`` plus the rendered
    ``prompt`` (RECALL_LABELS unless ``labels``). Invalid arguments come back as
    ``{"error": ...}``; provider errors fail the task — a late recall is useless, so no retry."""
    from eros.errors import RecallError
    from eros.recall import recall

    p = pipeline()
    try:
        result = recall(p.engine, p.embedder, user_id, query, instance_id=instance_id,
                        scope=scope, strategy=strategy, k=k,  # type: ignore[arg-type]
                        include_replaced=include_replaced, settings=settings)
        payload = result.to_dict()
        payload["prompt"] = result.render(labels or settings.recall_labels)
    except (RecallError, ValueError) as err:
        log.warning("recall for user %s rejected: %s", user_id, err)
        return {"error": str(err)}
    return payload
