"""Replay a suite through the real pipeline, as production would have seen it: sessions are
ingested with their timeline shifted to end an hour ago, idle sessions are claimed with the
production claim statement and classified in-process (the same service the Celery task runs),
each memory is dated by its session (the months of a suite are dreamt in seconds:
:mod:`eros.evaluation.db.replay_sql`), then every user gets one consolidation pass."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine

from eros.consolidation.services.consolidate import Consolidator, consolidate, start_pass
from eros.dreaming.services.classify import Pipeline
from eros.dreaming.services.ingest import ingest
from eros.errors import PermanentError
from eros.evaluation.core.suite import Suite
from eros.evaluation.db.replay_sql import classification_usage, date_memories_by_session
from eros.evaluation.services.classifying import claim_next, classify_claims
from eros.evaluation.services.ids import as_uuid, persona_of
from eros.evaluation.services.progress import Progress, silent
from eros.prompts import load_prompt
from eros.providers.base import ChatCompleter, Embedder
from eros.recall.services import turn_centres
from eros.settings import Settings


@dataclass
class ReplayReport:
    sessions: int = 0
    classified: int = 0
    memories: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    cost_usd: float = 0.0
    merged: int = 0
    superseded: int = 0
    shifted_by_days: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)


def _lines(suite: Suite) -> list[bytes]:
    persona = str(persona_of(suite))
    out = []
    for user in suite.users:
        for s in user.sessions:
            out.append(json.dumps({
                "session_id": str(as_uuid(s.id)), "user_id": str(as_uuid(user.id)),
                "instance_id": persona, "last_active_at": s.ended_at.isoformat(),
                "messages": [{"role": t.role, "content": t.content,
                              "sent_at": t.at.isoformat()} for t in s.turns]},
                ensure_ascii=False).encode())
    return out


def replay(engine: Engine, settings: Settings, suite: Suite, llm: ChatCompleter,
           embedder: Embedder, *, consolidation: bool = True,
           now: datetime | None = None, extractor: ChatCompleter | None = None,
           progress: Progress = silent) -> ReplayReport:
    """Ingest, classify and consolidate ``suite`` into ``engine`` (a scratch database).

    ``extractor`` answers the extraction calls instead of ``llm`` (which still consolidates):
    ``--extractor observations`` passes the suite's observations (``observations.py``).
    Classification stays in this process, in claim order: the turn sketches' centre
    (:mod:`eros.recall.services.turn_centres`) is an average over the table in its physical order,
    so
    sessions classified in parallel, their turns written in another interleaving, can move it
    in its last bits and a turn's sketch with it (one answer in 9,905 changed on LoCoMo)."""
    report = ReplayReport()
    started = time.perf_counter()
    lines = _lines(suite)
    loaded = ingest(engine, lambda: iter(lines), shift="always", now=now)
    if loaded.bad:
        raise PermanentError(f"suite session rejected: {loaded.bad[0]}", provider="eval")
    report.sessions = loaded.inserted
    report.shifted_by_days = (loaded.shifted_by.total_seconds() / 86400
                              if loaded.shifted_by else 0.0)
    report.timings["ingest"] = time.perf_counter() - started

    mark = time.perf_counter()
    pipeline = Pipeline(settings, engine, extractor or llm, embedder,
                        load_prompt(settings.dreaming_prompt_file))
    with progress("classify", report.sessions) as advance:
        while batch := claim_next(engine, settings):
            memories, classified = classify_claims(pipeline, batch, advance)
            report.memories += memories
            report.classified += classified
    with engine.begin() as conn:
        date_memories_by_session(conn)
        usage = classification_usage(conn)
    # what the cells finder (beat) does once a model has turns enough: centre their sketches
    turn_centres.ensure_centres(engine)
    report.timings["classify"] = time.perf_counter() - mark

    mark = time.perf_counter()
    if consolidation:
        from eros.consolidation.core.consolidation_reply import load_consolidation_prompt

        c = Consolidator(settings, engine, llm, embedder, load_consolidation_prompt())
        with progress("consolidate", len(suite.users)) as advance:
            for user in suite.users:
                uid = as_uuid(user.id)
                start_pass(c, uid)
                done = consolidate(c, uid)
                report.merged += done.merged
                report.superseded += done.superseded
                usage["llm_calls"] += done.llm_calls
                usage["prompt_tokens"] += done.prompt_tokens
                usage["completion_tokens"] += done.completion_tokens
                usage["embedding_tokens"] += done.embedding_tokens
                advance(1)
    report.timings["consolidate"] = time.perf_counter() - mark
    report.llm_calls = int(usage["llm_calls"])
    report.prompt_tokens = int(usage["prompt_tokens"])
    report.completion_tokens = int(usage["completion_tokens"])
    report.embedding_tokens = int(usage["embedding_tokens"])
    report.cost_usd = pipeline.cost({"prompt_tokens": report.prompt_tokens,
                                     "completion_tokens": report.completion_tokens,
                                     "embedding_tokens": report.embedding_tokens})
    return report
