"""The beat-driven finder: which users need a consolidation pass now.

A user is due when (1) some of their current memories are not yet compared (no pass has searched
their neighbours: their rows in ``consolidation_backlog``) and were not measured since
(``consolidation_state.seen_until``), and (2) the near-duplicate share of those new memories
(measured on at most ``CONSOLIDATION_FINDER_SAMPLE`` of them) is at least
``CONSOLIDATION_MIN_NEAR_DUP_SHARE``. The finder's cost follows the backlog, not the number of
memories users have. Backpressure mirrors the session claim: at most
``CONSOLIDATION_BATCH`` users are claimed per run, a user claimed less than
``DREAMING_CLAIM_STALE_SECS`` ago is not enqueued again, a parked user (attempt cap) is skipped,
and concurrent finders (two beats) claim disjoint users.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Engine

from eros.consolidation.db import finder_sql as sql
from eros.settings import Settings


@dataclass(frozen=True)
class FinderResult:
    claimed: list[uuid.UUID]
    #: users whose share was measured this run.
    measured: int
    #: of those, below the threshold (remembered, so not measured again until new memories).
    below_threshold: int
    #: due but over the batch: left for the next run.
    over_batch: int


def find_and_claim(engine: Engine, settings: Settings, *, batch: int | None = None
                   ) -> FinderResult:
    """Measure, choose and claim in one transaction; the caller enqueues the claimed users."""
    limit = batch or settings.consolidation_batch
    threshold = settings.consolidation_min_near_dup_share
    with engine.begin() as conn:
        candidates = sql.find_candidates(
            conn, similarity=settings.consolidation_similarity,
            stale_secs=settings.dreaming_claim_stale_secs,
            max_attempts=settings.consolidation_max_attempts,
            scan_limit=settings.consolidation_scan_limit,
            sample=settings.consolidation_finder_sample)
        due = [u for u in candidates if u.share >= threshold]
        below = [u for u in candidates if u.share < threshold]
        sql.mark_checked(conn, below)
        claimed = sql.claim_users(conn, [u.user_id for u in due[:limit]],
                                  stale_secs=settings.dreaming_claim_stale_secs)
    return FinderResult(claimed, len(candidates), len(below), max(0, len(due) - limit))
