"""The classify step of a replay: idle sessions claimed with the production claim statement
and classified in order by the service the Celery task runs (in the command's process, or in
a worker: :mod:`.parallel`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Engine

from eros.dreaming.services.classify import Pipeline, classify, start_attempt
from eros.memory.core.claims import Claim
from eros.memory.db import repo
from eros.settings import Settings


def claim_next(engine: Engine, settings: Settings) -> list[Claim]:
    """The next idle sessions, claimed with the production claim statement."""
    with engine.begin() as conn:
        return repo.claim_idle(conn, idle_secs=settings.dreaming_idle_secs,
                               stale_secs=settings.dreaming_claim_stale_secs, batch=500)


def classify_claims(pipeline: Pipeline, claims: Sequence[Claim],
                    advance: Callable[[int], None]) -> tuple[int, int]:
    """Classify claimed sessions in order (the service the Celery task runs): the memories
    written and the sessions classified. ``advance(1)`` after each."""
    memories = classified = 0
    for claim in claims:
        attempt = start_attempt(pipeline, claim.session_id, claim.token)
        if attempt is not None:
            memories += classify(pipeline, attempt).memories_written
            classified += 1
        advance(1)
    return memories, classified
