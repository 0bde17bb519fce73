"""``eros relabel --labeller model`` / ``eros.relabel_sensitivity(labeller="model")``: label
memories written before migration 0018 with the configured model (DREAMING_MODEL, the one that
labels new memories at extraction), :data:`~eros.privacy.core.relabel_reply.CALL_SIZE`
memories per call.

Resumable like the offline labeller, on its own cursor (``relabel_progress`` row
``labeller = 'model'``): each call's rows are read in one short transaction, the model is
asked outside any transaction (no lock or snapshot is held over an HTTP call), and the labels
are written and the cursor advanced in a second transaction — only if the cursor has not
moved meanwhile (another run took the same rows: this answer is dropped, the rows are not
labelled twice). A run that stops resumes after the last call it wrote.

Calls go through the global limits (LLM_REQUESTS_PER_MINUTE, LLM_TOKENS_PER_MINUTE,
LLM_MAX_CONCURRENCY: waited for, counted as throttled time) and are costed with the
LLM_PRICE_* table (``eros_tokens_total``, ``eros_cost_usd_total``, the run's ``cost_usd``). A
transient provider error is retried a few times (DREAMING_RETRY_BACKOFF_SECS doubling, capped
by DREAMING_RETRY_BACKOFF_MAX_SECS, or the provider's Retry-After), then raised (the cursor keeps
what was written). The reply is parsed strictly (:mod:`eros.privacy.core.relabel_reply`): an
unreadable entry leaves its row unlabelled and is counted (``unreadable``,
``eros_relabel_unreadable_total``). Nothing a memory says, nor the reply, is logged.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Engine

from eros.core.cost import Prices, cost_usd
from eros.core.sensitivity import MODEL_LABELLER
from eros.errors import TransientError
from eros.ops import metrics
from eros.privacy.core.relabel_reply import (
    CALL_SIZE,
    MAX_TOKENS,
    SYSTEM,
    build_request,
    parse_labels,
)
from eros.privacy.db import consent_sql
from eros.providers.base import ChatCompleter
from eros.providers.ratelimit import Limiter, NoLimits, Throttled
from eros.recall.db import turn_trust_sql
from eros.settings import Settings

log = logging.getLogger("eros.privacy.services.consent")

#: the model labeller's progress row
MODEL: Final = MODEL_LABELLER
#: transient provider errors in a row before the run stops (resumable)
MAX_TRANSIENT = 5


@dataclass
class ModelRun:
    """What one run did: rows scanned and labelled, unreadable entries, calls, tokens, cost."""

    scanned: int = 0
    labelled: int = 0
    unreadable: int = 0
    calls: int = 0
    dropped_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    throttled_secs: float = 0.0
    erased: int = 0
    #: turns whose label the memories labelled here raised (a cited turn carries its memory's
    #: label)
    turns_labelled: int = 0
    batches: int = 0


def _estimate(texts: list[str]) -> int:
    """Tokens to reserve for one call: the prompt (about four characters a token) and the cap."""
    return (len(SYSTEM) + sum(len(t) + 16 for t in texts)) // 4 + MAX_TOKENS


def run_batches(engine: Engine, settings: Settings, llm: ChatCompleter, *, batch: int,
                max_batches: int | None, erase: Callable[[uuid.UUID, str], int],
                limiter: Limiter | None = None,
                sleep: Callable[[float], None] = time.sleep) -> tuple[ModelRun, bool]:
    """Label from the model's cursor on, ``min(batch, CALL_SIZE)`` rows per call and
    transaction, at most ``max_batches`` calls; the run's figures and whether the scan is
    done. A row labelled with a label its user withheld is erased by ``erase(user, label)``
    (a ``forget --sensitive``) right after its batch committed, as the offline labeller
    does: a run that stops later leaves no such row behind the cursor."""
    limits = limiter or NoLimits()
    size = min(batch, CALL_SIZE)
    run, done, batches = ModelRun(), False, 0
    while max_batches is None or batches < max_batches:
        with engine.begin() as conn:
            state = consent_sql.lock(conn, MODEL)
            if state.done_at is not None:
                run.batches = batches
                return run, True
            rows = consent_sql.batch(conn, after=state.after_id, cutoff=state.cutoff, n=size)
        labels = None
        if rows:
            labels = _ask(llm, [r.content for r in rows], limits, run, settings, sleep)
        with engine.begin() as conn:
            now = consent_sql.lock(conn, MODEL)
            if now.after_id != state.after_id or now.done_at is not None:
                run.dropped_calls += 1 if rows else 0  # another run wrote these rows first
                batches += 1
                continue
            found = [] if labels is None else [
                (r.id, label) for r, label in zip(rows, labels.labels, strict=True)
                if label is not None]
            ids = consent_sql.set_labels(conn, found)
            run.turns_labelled += len(turn_trust_sql.inherit_labels(conn, ids))
            hits = consent_sql.withheld_hits(conn, ids)
            done = len(rows) < size
            consent_sql.advance(conn, MODEL, after=rows[-1].id if rows else None,
                                scanned=len(rows), labelled=len(ids), done=done)
        run.scanned += len(rows)
        run.labelled += len(ids)
        run.erased += sum(erase(user_id, label) for user_id, label in hits)
        if labels is not None and labels.unreadable_count:
            run.unreadable += labels.unreadable_count
            metrics.record_relabel_unreadable(labels.unreadable_count)
        batches += 1
        if done:
            break
    run.batches = batches
    return run, done


def ask_labels(llm: ChatCompleter, texts: list[str], limits: Limiter, run: ModelRun,
               settings: Settings, sleep: Callable[[float], None] = time.sleep
               ) -> list[str | None]:
    """One call's labels for ``texts`` (the turn scan's labeller): an unreadable entry is no
    label, counted in ``run`` and the metric as the memory scan counts it."""
    labels = _ask(llm, texts, limits, run, settings, sleep)
    if labels.unreadable_count:
        run.unreadable += labels.unreadable_count
        metrics.record_relabel_unreadable(labels.unreadable_count)
    return list(labels.labels)


def _ask(llm: ChatCompleter, texts: list[str], limits: Limiter, run: ModelRun,
         settings: Settings, sleep: Callable[[float], None]) -> Any:
    """One call for ``texts`` through the limits, retried on a transient error; its labels."""
    failures = 0
    while True:
        try:
            limits.reserve("llm", tokens=_estimate(texts))
            with limits.slot("llm"), metrics.registry().LLM_LATENCY.time():
                completion = llm.complete(SYSTEM, build_request(texts), max_tokens=MAX_TOKENS)
        except Throttled as err:
            run.throttled_secs += err.wait
            sleep(err.wait)
            continue
        except TransientError as err:
            failures += 1
            if failures > MAX_TRANSIENT:
                raise
            log.warning("relabel: transient %s error; retry %d", err.provider, failures)
            backoff = min(settings.dreaming_retry_backoff_max_secs,
                          settings.dreaming_retry_backoff_secs * 2 ** (failures - 1))
            sleep(max(backoff, err.retry_after or 0.0))
            continue
        break
    run.calls += 1
    run.prompt_tokens += completion.prompt_tokens
    run.completion_tokens += completion.completion_tokens
    prices = Prices(settings.llm_price_input_per_mtok, settings.llm_price_output_per_mtok,
                    settings.embedding_price_per_mtok)
    cost = cost_usd(prices, prompt_tokens=completion.prompt_tokens,
                    completion_tokens=completion.completion_tokens, embedding_tokens=0,
                    llm_offline=llm.offline)
    run.cost_usd = round(run.cost_usd + cost, 8)
    metrics.record_spend(prompt_tokens=completion.prompt_tokens,
                         completion_tokens=completion.completion_tokens, cost=cost)
    return parse_labels(completion.text, len(texts), truncated=completion.truncated)
