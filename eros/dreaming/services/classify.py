"""Classify one claimed session: extract, normalise, embed, write and stamp atomically.

Network errors propagate as :class:`~eros.errors.TransientError` for the task to retry; the
database is only touched in short transactions before and after the HTTP calls, never across.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from sqlalchemy import Connection, Engine

from eros.core.cost import Prices, cost_usd
from eros.core.outcomes import OutcomeKind
from eros.core.statuses import CURRENT, MemoryStatus
from eros.core.text import strip_invisible
from eros.core.transcript import Transcript, build_transcript
from eros.dreaming.db import finish_sql
from eros.dreaming.services import turn_index
from eros.dreaming.services.turn_index import TurnCounts, TurnText
from eros.guard.core.guard import scalar_text
from eros.guard.services.guard_model import TURN_EMBED_CHARS, guard_for, screen_texts
from eros.memory.core.channels import readable_turns
from eros.memory.core.claims import Attempt, MemoryRow, Outcome
from eros.memory.core.parsing import Candidate, ParseResult, parse_extraction
from eros.memory.core.provenance import resolve_sources
from eros.memory.db import repo
from eros.ops import metrics
from eros.privacy.services.consent import drop_withheld
from eros.prompts import Prompt, user_message
from eros.providers.base import ChatCompleter, Completion, Embedder
from eros.providers.ratelimit import Limiter, NoLimits
from eros.recall.db.turns_sql import TurnRow
from eros.settings import Settings

#: what an extraction's embedding request is charged against EMBEDDING_TOKENS_PER_MINUTE
#: before its size is known (10 memories of about 40 tokens).
EMBEDDING_TOKEN_ESTIMATE = 400

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pipeline:
    """What classify needs, built once per worker process."""

    settings: Settings
    engine: Engine
    llm: ChatCompleter
    embedder: Embedder
    prompt: Prompt
    limiter: Limiter = field(default_factory=NoLimits)

    @property
    def prices(self) -> Prices:
        s = self.settings
        return Prices(s.llm_price_input_per_mtok, s.llm_price_output_per_mtok,
                      s.embedding_price_per_mtok)

    def cost(self, outcome_tokens: dict[str, int]) -> float:
        return cost_usd(self.prices, llm_offline=self.llm.offline,
                        embedder_offline=self.embedder.offline, **outcome_tokens)


@dataclass
class Report:
    """What happened, for logs, the CLI's ``classify`` and tests."""

    session_id: str
    #: ``pending`` until the run ends; ``claim_lost`` when another worker took the session
    outcome: OutcomeKind | Literal["pending", "claim_lost"]
    attempt: int = 0
    memories_written: int = 0
    transcript: str = ""
    raw_reply: str = ""
    candidates: list[Candidate] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


def start_attempt(pipeline: Pipeline, session_id: uuid.UUID,
                  token: uuid.UUID) -> Attempt | None:
    """Count an attempt and refresh the claim; None when the token is no longer the claim's.
    The attempt carries the session's new turns, read by the same statement: one round trip."""
    with _write_connection(pipeline) as conn:
        return repo.begin_attempt(conn, session_id, token, read_turns=True)


@contextmanager
def _write_connection(pipeline: Pipeline) -> Iterator[Connection]:
    """For one statement that is a transaction by itself: AUTOCOMMIT (no BEGIN and COMMIT
    round trips), unless the DATABASE_* timeouts are set per transaction (PgBouncer in
    transaction mode), where it runs in an explicit one."""
    if pipeline.settings.database_pool_mode == "transaction":
        with pipeline.engine.begin() as conn:
            yield conn
        return
    with pipeline.engine.connect() as conn:
        yield conn.execution_options(isolation_level="AUTOCOMMIT")


def classify(pipeline: Pipeline, attempt: Attempt, *, task_id: str | None = None,
             dry_run: bool = False) -> Report:
    """Run one attempt to its recorded end, or raise TransientError/PermanentError."""
    settings = pipeline.settings
    claim = attempt.claim
    report = Report(str(claim.session_id), "pending", attempt.attempt)
    if attempt.turns is not None:
        turns, through_seq = list(attempt.turns[0]), attempt.turns[1]
    else:
        with pipeline.engine.connect() as conn:
            turns, through_seq = repo.read_new_turns(conn, claim.session_id,
                                                     after_seq=attempt.through_seq)
    transcript = build_transcript(readable_turns(turns, settings.channels),
                                  budget_chars=settings.dreaming_transcript_budget_chars,
                                  numbered=pipeline.prompt.numbered)
    report.transcript = transcript.text
    if transcript.empty:
        return _finish(pipeline, attempt, report, Outcome("empty"), through_seq, transcript,
                       [], task_id, dry_run)
    # the user's own turns become a recall layer: embedded in the same request
    # as the candidates, screened and labelled alike (eros/dreaming/services/turn_index.py)
    user_turns = turn_index.user_turns(turns, settings.channels)

    _reserve(pipeline, transcript, user_turns)
    # the memory guard (docs/security.md): nothing that reads as an instruction, a role or a
    # secret becomes a memory — rules and secrets first, then the meaning classifier on each
    # candidate's own embedding (the one written with it: no extra call); only counts by
    # reason are kept, never the dropped text.
    # Every concurrency slot is taken before the first paid call: nothing after the LLM has
    # answered can raise Throttled and have the paid call repeated (a retry would pay twice).
    with pipeline.limiter.slots("llm", "embedding"):
        completion, truncated_twice = _complete(pipeline, transcript)
        parsed = parse_extraction(completion.text, max_items=settings.dreaming_max_memories,
                                  salvage=truncated_twice)
        # a turn's label: its own (offline labeller) and every cited candidate's, the
        # dropped ones' too; a turn with a withheld label is not indexed either
        indexed, turns_withheld = turn_index.labelled(
            user_turns, turn_index.cited_labels(parsed.candidates, transcript.seqs),
            attempt.withheld)
        # consent: the labels this user withdrew (forget --sensitive) are not stored
        allowed, withheld_dropped = drop_withheld(parsed.candidates, attempt.withheld)
        parsed = replace(parsed, candidates=tuple(allowed))
        texts = [strip_invisible(c.content) for c in parsed.candidates]
        screening = screen_texts(settings, pipeline.engine, pipeline.embedder, texts,
                                 llm=pipeline.llm, turns=[t.text for t in indexed])
    counts = TurnCounts(read=len(user_turns), withheld=turns_withheld)
    turn_rows = turn_index.turn_rows(
        indexed, screening, len(texts),
        session_of={t.seq: (claim.session_id, claim.user_id, claim.instance_id)
                    for t in indexed}, counts=counts)
    report.detail["embedding_requests"] = screening.requests
    kept = [i for i in screening.kept if i < len(texts)]
    candidates = [parsed.candidates[i].model_copy(update={"content": texts[i]}) for i in kept]
    metadata, metadata_dropped = _screened_metadata(settings, candidates)
    report.raw_reply = completion.text
    report.candidates = candidates
    usage: dict[str, Any] = {
        "model": completion.model,
        "prompt_tokens": completion.prompt_tokens + screening.prompt_tokens,
        "completion_tokens": completion.completion_tokens + screening.completion_tokens}
    dropped = Counter(v.reason or "unknown" for v in screening.verdicts[:len(texts)]
                      if not v.ok)
    report.detail.update(dropped=parsed.dropped, parse_errors=list(parsed.errors),
                         turns_trimmed=transcript.turns_trimmed,
                         guard_dropped=dict(dropped), metadata_dropped=metadata_dropped,
                         withheld=withheld_dropped)
    usage["guard_dropped"] = sum(dropped.values())
    kind = _outcome_kind(parsed, truncated_twice)
    if not candidates:
        kind = "no_memories" if kind == "memories" else kind
        error = "; ".join(parsed.errors) or None
        if truncated_twice:
            error = "reply cut off at the token limit twice; nothing complete to keep"
        tokens = screening.embeddings.total_tokens if screening.embeddings else 0
        return _finish(pipeline, attempt, report,
                       Outcome(kind, error=error, embedding_tokens=tokens, **usage),
                       through_seq, transcript, [], task_id, dry_run, (turn_rows, counts))
    assert screening.embeddings is not None
    embeddings = screening.embeddings
    vectors = [screening.vectors[i] for i in kept]

    # no meaning model yet: what passed the rules and the secret checks waits
    # unscreened — never recalled nor consolidated — until eros.screen_unscreened judges it
    status: MemoryStatus = "unscreened" if screening.pending else CURRENT
    report.detail["unscreened"] = len(candidates) if screening.pending else 0
    rows = [_memory_row(c, meta, vector, embeddings.model, pipeline.prompt, transcript, status)
            for c, meta, vector in zip(candidates, metadata, vectors, strict=True)]
    error = "reply cut off at the token limit twice; complete items kept" \
        if truncated_twice else None
    outcome = Outcome(kind, memory_count=len(rows), embedding_tokens=embeddings.total_tokens,
                      error=error, **usage)
    return _finish(pipeline, attempt, report, outcome, through_seq, transcript, rows, task_id,
                   dry_run, (turn_rows, counts))


def _reserve(pipeline: Pipeline, transcript: Transcript, turns: Sequence[TurnText]) -> None:
    """Charge the global per-minute budgets before spending anything (raises Throttled): the
    embedding request carries the candidates and the user's turns (about 4 characters a
    token, as embedded)."""
    turn_tokens = sum(min(len(t.text), TURN_EMBED_CHARS) // 4 + 1 for t in turns)
    pipeline.limiter.reserve_all({"llm": _llm_estimate(pipeline, transcript),
                                  "embedding": EMBEDDING_TOKEN_ESTIMATE + turn_tokens})


def _llm_estimate(pipeline: Pipeline, transcript: Transcript, *, retry: bool = False) -> int:
    """Prompt tokens (about 4 characters each) plus the reply's ceiling."""
    settings = pipeline.settings
    ceiling = settings.dreaming_truncation_retry_tokens if retry else settings.dreaming_max_tokens
    return (len(pipeline.prompt.system) + len(transcript.text)) // 4 + ceiling


def _complete(pipeline: Pipeline, transcript: Transcript) -> tuple[Completion, bool]:
    """One call; a reply cut off at max_tokens is retried once with the larger limit."""
    settings = pipeline.settings
    message = user_message(transcript.text)
    with metrics.registry().LLM_LATENCY.time():
        completion = pipeline.llm.complete(pipeline.prompt.system, message,
                                           max_tokens=settings.dreaming_max_tokens)
    if not completion.truncated:
        return completion, False
    log.warning("reply cut off at max_tokens=%d; retrying once with %d",
                settings.dreaming_max_tokens, settings.dreaming_truncation_retry_tokens)
    # the first reply is paid for: charge the retry to the budget (into debt if need be)
    # rather than give up the reply because the bucket is empty
    pipeline.limiter.reserve("llm", tokens=_llm_estimate(pipeline, transcript, retry=True),
                             debt=True)
    with metrics.registry().LLM_LATENCY.time():
        retry = pipeline.llm.complete(pipeline.prompt.system, message,
                                      max_tokens=settings.dreaming_truncation_retry_tokens)
    merged = Completion(retry.text, retry.finish_reason, retry.model,
                        completion.prompt_tokens + retry.prompt_tokens,
                        completion.completion_tokens + retry.completion_tokens)
    return merged, retry.truncated


def _outcome_kind(parsed: ParseResult, truncated: bool) -> OutcomeKind:
    if truncated:
        return "truncated"
    kinds: dict[str, OutcomeKind] = {"ok": "memories", "empty": "no_memories",
                                     "unparseable": "unparseable"}
    return kinds[parsed.status]


def _screened_metadata(settings: Settings, candidates: Sequence[Candidate]
                       ) -> tuple[list[dict[str, Any]], int]:
    """Each candidate's known metadata keys (MEMORY_GUARD_METADATA_KEYS) with short scalar
    values, string and number values through the memory guard (a number as its digits); how
    many fields were dropped."""
    allowed = [k.strip() for k in settings.memory_guard_metadata_keys.split(",") if k.strip()]
    guard = guard_for(settings)
    out, dropped = [], 0
    for candidate in candidates:
        fields, unknown = candidate.metadata_fields(allowed)
        dropped += unknown
        for key, value in list(fields.items()):
            # a number is screened as the string it is ("confidence": 4111111111111111 is a
            # card number); a boolean has nothing to hide
            judged = scalar_text(value)
            if judged is not None and not guard.check(judged).ok:
                del fields[key]
                dropped += 1
        out.append(fields)
    return out, dropped


def _memory_row(candidate: Candidate, extra: dict[str, Any], vector: list[float],
                embedding_model: str, prompt: Prompt, transcript: Transcript,
                status: MemoryStatus = CURRENT) -> MemoryRow:
    metadata = {**extra, "prompt_version": prompt.version,
                "source_seq": [transcript.first_seq, transcript.last_seq]}
    # the turns it came from: its citation, or the window read, flagged (core/provenance.py)
    provenance = resolve_sources(candidate.sources, transcript.seqs)
    return MemoryRow(candidate.content, candidate.category, candidate.importance, metadata,
                     vector, candidate.layer, embedding_model, provenance.seqs,
                     provenance.fallback, candidate.sensitivity, status)


def _finish(pipeline: Pipeline, attempt: Attempt, report: Report, outcome: Outcome,
            through_seq: int, transcript: Transcript, rows: list[MemoryRow],
            task_id: str | None, dry_run: bool,
            turns: tuple[Sequence[TurnRow], TurnCounts] | None = None) -> Report:
    outcome = replace(outcome, cost_usd=pipeline.cost({
        "prompt_tokens": outcome.prompt_tokens, "completion_tokens": outcome.completion_tokens,
        "embedding_tokens": outcome.embedding_tokens}))
    report.outcome = outcome.kind
    report.detail["cost_usd"] = outcome.cost_usd
    turn_rows, counts = turns or ((), TurnCounts())
    report.detail.update(counts.as_detail())
    if dry_run:
        report.detail["would_write"] = len(rows)
        report.detail["would_index"] = len(turn_rows)
        report.detail["turns_indexed"] = 0
        return report
    # one statement: the stamp, the memories, the run row and the turns, behind the claim's
    # fence (eros/dreaming/db/finish_sql.py)
    with _write_connection(pipeline) as conn:
        finished = finish_sql.finish_session(conn, attempt, outcome, through_seq=through_seq,
                                             memories=rows, turns=turn_rows, task_id=task_id)
    if finished is None:
        report.outcome = "claim_lost"
        report.detail["turns_indexed"] = 0
        log.warning("claim lost before write; nothing written",
                    extra={"session_id": report.session_id})
        return report
    written = finished.memories
    counts.statuses = finished.turns
    report.detail.update(counts.as_detail())
    turn_index.record("classify", counts)
    report.memories_written = written
    metrics.record_outcome(outcome.kind, memories=written, prompt_tokens=outcome.prompt_tokens,
                           completion_tokens=outcome.completion_tokens,
                           embedding_tokens=outcome.embedding_tokens, cost=outcome.cost_usd)
    metrics.record_guard_drops("extract", report.detail.get("guard_dropped", {}))
    if written:  # a re-run whose rows all exist writes nothing and counts nothing
        metrics.record_sensitive(Counter(r.sensitivity for r in rows if r.sensitivity))
    log.info("session classified: outcome=%s memories=%d guard_dropped=%d "
             "metadata_dropped=%d unscreened=%d turns_indexed=%d turns_dropped=%d "
             "embedding_requests=%d", outcome.kind, written, outcome.guard_dropped,
             report.detail.get("metadata_dropped", 0), report.detail.get("unscreened", 0),
             report.detail["turns_indexed"], sum(counts.dropped.values()) + counts.withheld,
             report.detail.get("embedding_requests", 0),
             extra={"session_id": report.session_id})
    return report
