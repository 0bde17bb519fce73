"""Make the meaning layer's model ahead of time: never inside a classify,
consolidation or recall task.

For the offline e5 embedder the model ships in the package (nothing to do). For a live
embedder :func:`ensure_model` embeds the exemplar bank and fits the classifier once for the
whole fleet: ``eros migrate`` and ``eros guard train`` call it, and so does every worker at
start-up before it consumes (``worker_init``) — under a PostgreSQL advisory lock
(``pg_try_advisory_xact_lock``, transaction-scoped) taken in the transaction that stores the
model, so exactly one process trains; the others find the lock taken and go on without the
layer (their candidates wait ``unscreened``) and pick the model up once it is committed.

The bank's embedding requests are ordinary embedding calls: charged to the global limits
(EMBEDDING_TOKENS_PER_MINUTE, EMBEDDING_REQUESTS_PER_MINUTE, EMBEDDING_MAX_CONCURRENCY) before
they are sent, counted in ``eros_tokens_total{kind="embedding"}`` and ``eros_cost_usd_total``,
recorded with the model (``guard_classifiers.embedding_tokens``/``cost_usd``, shown by ``eros
status``) and logged once, with sizes and never a text.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sqlalchemy import Engine

from eros.core.cost import Prices, cost_usd
from eros.errors import TransientError
from eros.guard.core.guard_meaning import load_bank, load_shipped, train
from eros.guard.db import guard_sql
from eros.guard.services.guard_layer import layer_off
from eros.guard.services.guard_model import forget_models
from eros.ops import metrics
from eros.providers.base import Embedder
from eros.providers.ratelimit import Limiter, NoLimits, Throttled
from eros.settings import Settings

log = logging.getLogger(__name__)

#: exemplars per embedding request
BANK_BATCH = 128


@dataclass
class TrainReport:
    """``outcome``: ``trained`` (this process trained and stored it), ``stored`` (it was in
    the database already), ``shipped`` (the package has it), ``busy`` (another process is
    training it now), ``off`` (the layer is off for this embedder)."""

    outcome: str
    embedding_model: str
    bank: str
    exemplars: int = 0
    requests: int = 0
    embedding_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    threshold: float | None = None
    balanced_accuracy: float | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def ensure_model(settings: Settings, engine: Engine, embedder: Embedder, *,
                 limiter: Limiter | None = None, max_transient: int = 5,
                 sleep: Callable[[float], None] = time.sleep) -> TrainReport:
    """The model for (embedder, bank) exists when this returns ``trained``/``stored``/
    ``shipped``; ``busy`` when another process holds the training lock. Raises the
    provider's PermanentError, or its TransientError after ``max_transient`` failures of one
    request in a row (nothing is stored; the lock goes with the transaction)."""
    bank = load_bank()
    report = TrainReport("off", embedder.name, bank.digest, len(bank.exemplars))
    if layer_off(settings, embedder.name):
        return report
    if load_shipped(embedder.name, bank.digest) is not None:
        report.outcome = "shipped"
        return report
    started = time.monotonic()
    with engine.connect() as conn, conn.begin():
        if guard_sql.load_classifier(conn, embedder.name, bank.digest) is not None:
            report.outcome = "stored"
            return report
        if not guard_sql.try_training_lock(conn, embedder.name, bank.digest):
            report.outcome = "busy"
            return report
        # the holder may have committed between the read above and the lock
        if guard_sql.load_classifier(conn, embedder.name, bank.digest) is not None:
            report.outcome = "stored"
            return report
        vectors = _embed_bank(embedder, bank.texts, limiter or NoLimits(), report,
                              max_transient, sleep)
        model = train(vectors, bank.labels)
        report.cost_usd = cost_usd(_prices(settings), prompt_tokens=0, completion_tokens=0,
                                   embedding_tokens=report.embedding_tokens,
                                   embedder_offline=embedder.offline)
        guard_sql.save_classifier(conn, embedder.name, bank.digest, model,
                                  embedding_tokens=report.embedding_tokens,
                                  cost_usd=report.cost_usd)
    report.outcome = "trained"
    report.seconds = round(time.monotonic() - started, 3)
    report.threshold, report.balanced_accuracy = model.threshold, model.balanced_accuracy
    metrics.record_spend(embedding_tokens=report.embedding_tokens, cost=report.cost_usd)
    forget_models()  # this process's "no model yet" is stale now
    log.info("memory guard meaning layer trained: model=%s bank=%s exemplars=%d requests=%d "
             "embedding_tokens=%d cost_usd=%.6f seconds=%.1f balanced_accuracy=%.3f",
             embedder.name, bank.digest, report.exemplars, report.requests,
             report.embedding_tokens, report.cost_usd, report.seconds,
             model.balanced_accuracy)
    return report


def train_for_settings(settings: Settings, engine: Engine) -> TrainReport:
    """:func:`ensure_model` with the configured embedder and global limits (the CLI's)."""
    from eros.providers import make_embedder
    from eros.providers.ratelimit import make_limiter

    return ensure_model(settings, engine, make_embedder(settings), limiter=make_limiter(settings))


def _embed_bank(embedder: Embedder, texts: list[str], limiter: Limiter, report: TrainReport,
                max_transient: int, sleep: Callable[[float], None]) -> list[list[float]]:
    vectors: list[list[float]] = []
    for start in range(0, len(texts), BANK_BATCH):
        batch = texts[start:start + BANK_BATCH]
        failures = 0
        while True:
            try:
                limiter.reserve("embedding", tokens=sum(max(1, len(t) // 4) for t in batch))
                with limiter.slot("embedding"), metrics.registry().EMBED_LATENCY.time():
                    result = embedder.embed(batch, input_type="document")
            except Throttled as err:
                sleep(err.wait)
                continue
            except TransientError as err:
                failures += 1
                if failures > max_transient:
                    raise
                sleep(max(min(60.0, 2.0 ** failures), err.retry_after or 0.0))
                continue
            break
        report.requests += 1
        report.embedding_tokens += result.total_tokens
        vectors.extend(result.vectors)
    return vectors


def _prices(settings: Settings) -> Prices:
    return Prices(settings.llm_price_input_per_mtok, settings.llm_price_output_per_mtok,
                  settings.embedding_price_per_mtok)
