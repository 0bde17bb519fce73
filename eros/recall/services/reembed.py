"""Re-embed every memory whose vector is not from the target embedding model (``eros
reembed``, task ``eros.reembed_memories``).

Recall keeps answering throughout: a row is switched to the new model and vector in one
UPDATE, recall ranks each model's rows apart (services/recall_models.py), and the rows not
yet done stay searchable under their old model. Progress is the rows themselves, so a run
killed at any point resumes where it stopped. Batches are the provider's maximum inputs
(REEMBED_BATCH), charged against the global embedding limits like every other call.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine

from eros.errors import ErosError, TransientError
from eros.providers.base import Embedder
from eros.providers.ratelimit import Limiter, NoLimits, Throttled
from eros.recall.db import cells_sql, reembed_sql
from eros.recall.db.reembed_sql import LIVE, Pending, Target
from eros.settings import Settings

log = logging.getLogger(__name__)


class ReembedBusy(ErosError):
    """Another re-embed run holds the lock; one at a time is enough (the batches are shared
    work, two runs would embed the same rows twice)."""


@dataclass
class ReembedReport:
    model: str
    total: int
    done: int = 0
    batches: int = 0
    tokens: int = 0
    throttled_secs: float = 0.0
    retries: int = 0
    finished: bool = False
    cells_dropped: int = 0
    elapsed_secs: float = 0.0
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Reembedder:
    settings: Settings
    engine: Engine
    embedder: Embedder
    limiter: Limiter = field(default_factory=NoLimits)
    #: the live columns, or those built beside them for a change of dimension
    target: Target = LIVE

    @property
    def model(self) -> str:
        return self.embedder.name

    def pending(self) -> int:
        with self.engine.connect() as conn:
            return reembed_sql.pending_count(conn, self.model, self.target)

    def run(self, *, on_batch: Callable[[int], None] | None = None,
            max_seconds: float | None = None, max_transient: int = 5,
            sleep: Callable[[float], None] = time.sleep) -> ReembedReport:
        """Re-embed until nothing is left (``finished``) or ``max_seconds`` have passed.

        Raises ReembedBusy when another run holds the lock, PermanentError from the provider,
        and TransientError after ``max_transient`` consecutive failures of one batch.
        """
        started = time.monotonic()
        # the lock lives as long as this connection's transaction: it is held open for the
        # run and rolled back at the end (or dropped with the connection by a killed run)
        with self.engine.connect() as lock_conn, lock_conn.begin():
            if not reembed_sql.try_lock(lock_conn):
                raise ReembedBusy("another re-embed run is in progress")
            report = ReembedReport(self.model, self.pending())
            after: uuid.UUID | None = None
            while max_seconds is None or time.monotonic() - started < max_seconds:
                with self.engine.connect() as conn:
                    batch = reembed_sql.next_batch(conn, self.model, after=after,
                                                   limit=self.settings.reembed_batch,
                                                   target=self.target)
                if not batch:
                    report.finished = True
                    break
                batch = batch[:self._fits(batch)]
                vectors = self._embed(batch, report, max_transient, sleep)
                with self.engine.begin() as conn:
                    report.done += reembed_sql.apply_batch(conn, batch, vectors, self.model,
                                                           self.target)
                    stale = [] if self.target != LIVE else reembed_sql.users_with_cells(
                        conn, [r.user_id for r in batch])
                    for user in stale:  # old-model centroids would mislead the probe
                        cells_sql.drop_cells(conn, user)
                    report.cells_dropped += len(stale)
                report.batches += 1
                after = batch[-1].id
                if on_batch is not None:
                    on_batch(len(batch))
            report.elapsed_secs = time.monotonic() - started
            log.info("re-embed %s: %d rows in %d batches, finished=%s", self.model,
                     report.done, report.batches, report.finished)
            return report

    def _fits(self, batch: list[Pending]) -> int:
        """How many rows of ``batch`` one request may carry under the token bucket's size
        (EMBEDDING_TOKENS_PER_MINUTE × RATE_LIMIT_BURST_SECS / 60), at least one."""
        per_minute = self.settings.embedding_tokens_per_minute
        if not per_minute:
            return len(batch)
        capacity = per_minute * self.settings.rate_limit_burst_secs / 60.0
        total = 0
        for index, row in enumerate(batch):
            total += _tokens(row.content)
            if total > capacity:
                return max(1, index)
        return len(batch)

    def _embed(self, batch: list[Pending], report: ReembedReport, max_transient: int,
               sleep: Callable[[float], None]) -> list[list[float]]:
        texts = [r.content for r in batch]
        failures = 0
        while True:
            try:
                self.limiter.reserve("embedding", tokens=sum(_tokens(t) for t in texts))
                with self.limiter.slot("embedding"):
                    result = self.embedder.embed(texts, input_type="document")
            except Throttled as err:
                report.throttled_secs += err.wait
                sleep(err.wait)
                continue
            except TransientError as err:
                failures += 1
                report.retries += 1
                if failures > max_transient:
                    raise
                backoff = min(self.settings.dreaming_retry_backoff_max_secs,
                              self.settings.dreaming_retry_backoff_secs * 2 ** (failures - 1))
                sleep(max(backoff, err.retry_after or 0.0))
                continue
            report.tokens += result.total_tokens
            return result.vectors


def _tokens(content: str) -> int:
    """The same estimate the providers' usage roughly matches: four characters a token."""
    return max(1, len(content) // 4)
