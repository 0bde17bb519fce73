"""One session through the classify step in a test: the pipeline and the consolidator on the
fake providers, the claim and the attempt, and a classify held at its model call."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine

from eros.consolidation.core.consolidation_reply import load_consolidation_prompt
from eros.consolidation.services.consolidate import Consolidator
from eros.dreaming.db import finish_sql
from eros.dreaming.services.classify import Pipeline, Report, classify, start_attempt
from eros.memory.core.claims import Attempt, MemoryRow, Outcome
from eros.memory.db import repo
from eros.prompts import Prompt, load_prompt
from eros.providers.embeddings import VoyageEmbedder
from eros.providers.llm import OpenRouterChat
from eros.settings import Settings
from testkit.fakes import FakeLLMServer, Reply


def fake_pipeline(settings: Settings, engine: Engine, prompt: Prompt | None = None) -> Pipeline:
    """The classify pipeline on the providers ``settings`` name (the fake servers in tests);
    ``prompt``: the shipped default's when None."""
    return Pipeline(settings, engine, OpenRouterChat(settings), VoyageEmbedder(settings),
                    prompt or load_prompt())


def fake_consolidator(settings: Settings, engine: Engine) -> Consolidator:
    return Consolidator(settings, engine, OpenRouterChat(settings), VoyageEmbedder(settings),
                        load_consolidation_prompt())


def classify_session(pipeline: Pipeline, sid: uuid.UUID) -> Report:
    """Claim the session, start its attempt and classify it (both asserted to happen)."""
    with pipeline.engine.begin() as conn:
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    attempt = start_attempt(pipeline, claim.session_id, claim.token)
    assert attempt is not None
    return classify(pipeline, attempt)


def claim_and_begin(engine: Engine, sid: uuid.UUID) -> Attempt:
    """Claim the session and begin its attempt in one transaction (the SQL layer's steps)."""
    with engine.begin() as conn:
        claim = repo.claim_one(conn, sid, stale_secs=600)
        assert claim is not None
        attempt = repo.begin_attempt(conn, sid, claim.token)
        assert attempt is not None
        return attempt


@contextmanager
def classify_held(pipeline: Pipeline, llm: FakeLLMServer,
                  sid: uuid.UUID) -> Iterator[list[Report]]:
    """Claim and start the session's attempt, then classify it in a thread whose model call
    waits: the body runs while the model has the transcript; on leaving, the model answers as
    it would have and the thread is joined. The list holds the classify's report then."""
    with pipeline.engine.begin() as conn:
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    attempt = start_attempt(pipeline, sid, claim.token)
    assert attempt is not None
    asked, release = threading.Event(), threading.Event()
    echo = llm._responder

    def held(request: dict[str, Any]) -> Reply:
        asked.set()
        assert release.wait(30)
        return echo(request)

    llm.set_responder(held)
    out: list[Report] = []
    thread = threading.Thread(target=lambda: out.append(classify(pipeline, attempt)))
    thread.start()
    try:
        assert asked.wait(20)
        yield out
    finally:
        release.set()
        thread.join(30)


def finish(conn: Connection, attempt: Attempt, outcome: Outcome, *, through_seq: int,
           memories: Sequence[MemoryRow] = ()) -> int | None:
    """Classify's finishing statement without turns: the memories it wrote, None when the
    claim was no longer ours."""
    done = finish_sql.finish_session(conn, attempt, outcome, through_seq=through_seq,
                                     memories=memories)
    return None if done is None else done.memories
