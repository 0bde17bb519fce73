"""Consolidate one user's memories (real dreaming): merge duplicates, supersede outdated facts.

The order is what makes it safe:

1. read (one short REPEATABLE READ transaction) the memories not yet compared
   (their rows in ``consolidation_backlog``), oldest first, at most CONSOLIDATION_CHUNK_SIZE of
   them, and their near neighbours in their user, layer, category and embedding model (through
   the binary sketches for a large user, exactly for a small one) — O(new × rows of that
   layer and category), never the user's all pairs. Memories committed after this read are
   still uncompared: the next pass takes them (a row marker, so a late commit with an older
   created_at is not skipped);
2. cluster (pure), then at most ONE model call for all the user's clusters and at most ONE
   embedding call for all new canonical rows, with no transaction open;
3. one write transaction that takes the per-user advisory lock (``pg_try_advisory_xact_lock``;
   a second pass for the same user gives up — the holder is doing the same work), re-checks
   that every row a step touches is still current (a concurrent pass may have consolidated it
   meanwhile: that step is skipped) and writes everything: canonical rows, members marked
   ``merged``/``superseded`` with ``replaced_by``/``replaced_at``, ``memory_history`` rows, the
   "judged" and "compared" stamps and ``consolidation_state``. Members of clusters that did
   not fit the call go back to "not compared", so the next pass finds them again; a backlog
   left over is reported (``backlog``) and the task enqueues the next chunk. A crash
   anywhere before the commit changes no memory; a redelivered task then finds nothing left
   to do.

Faults follow classification: a network error propagates as TransientError (the task retries
with backoff), a reply that cannot be parsed changes nothing and is recorded.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine

from eros.consolidation.core.consolidation import (
    Memory,
    Pair,
    Selection,
    cluster,
    near_dup_share,
    select_clusters,
)
from eros.consolidation.core.consolidation_plan import Plan, Step, build_plan
from eros.consolidation.core.consolidation_reply import (
    Rejection,
    ReplyResult,
    build_request,
    parse_reply,
)
from eros.consolidation.db import consolidation_sql as sql
from eros.consolidation.db import consolidation_state_sql as state_sql
from eros.consolidation.db import consolidation_write_sql as write_sql
from eros.consolidation.services.consolidation_read import Read, read_new
from eros.consolidation.services.consolidation_report import (
    ConsolidationReport,
    cluster_view,
    describe,
    timed,
)
from eros.core.outcomes import ConsolidationOutcome
from eros.core.text import strip_invisible
from eros.errors import PermanentError
from eros.guard.core.guard import Verdict
from eros.guard.services.guard_model import meaning_layer, screen_texts
from eros.memory.core.provenance import merged
from eros.ops import metrics
from eros.prompts import Prompt
from eros.providers.base import ChatCompleter, Embedder
from eros.recall.db import turn_trust_sql
from eros.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Consolidator:
    """What a pass needs, built once per worker process."""

    settings: Settings
    engine: Engine
    llm: ChatCompleter
    embedder: Embedder
    prompt: Prompt


def start_pass(c: Consolidator, user_id: uuid.UUID) -> int | None:
    """Count an attempt and (re)claim the user; returns the attempt number, or None when the
    user has no memories (nothing to do; e.g. forgotten since the pass was queued)."""
    with c.engine.begin() as conn:
        return state_sql.begin_pass(conn, user_id)


def record_failure(c: Consolidator, user_id: uuid.UUID, outcome: ConsolidationOutcome,
                   error: str, *,
                   keep_claim: bool = False) -> None:
    with c.engine.begin() as conn:
        state_sql.record_failure(conn, user_id, outcome=outcome, error=error, keep_claim=keep_claim)


def defer_for_guard(c: Consolidator, user_id: uuid.UUID) -> bool:
    """True (and the user's claim released, no attempt counted) while the memory guard's
    meaning layer has no model yet: a canonical text could not be judged, so the
    pass waits for the model; the finder enqueues the user again on a later run."""
    if not meaning_layer(c.settings, c.engine, c.embedder).pending:
        return False
    with c.engine.begin() as conn:
        state_sql.record_failure(conn, user_id, outcome="guard_pending",
                                 error="the memory guard's meaning layer has no model yet")
    return True


def consolidate(c: Consolidator, user_id: uuid.UUID, *, dry_run: bool = False,
                new_id: Callable[[], uuid.UUID] = uuid.uuid4,
                keep_claim_on_backlog: bool = False,
                reader: Callable[[], Read] | None = None) -> ConsolidationReport:
    """One pass (one chunk) for one user; raises TransientError/PermanentError from the
    providers. ``keep_claim_on_backlog``: the caller enqueues the next chunk itself, so the
    claim stays (the finder does not enqueue the user a second time meanwhile). ``reader``:
    the chunk's read instead of :func:`read_new` (the bulk first pass's)."""
    s = c.settings
    report = ConsolidationReport(str(user_id), dry_run=dry_run)
    with timed(report, "read"):
        read = reader() if reader is not None else read_new(c.engine, c.settings, user_id)
    report.compared, report.search = len(read.chunk), read.search
    memories, pairs = read.memories, read.pairs
    with timed(report, "cluster"):
        clustering = cluster(memories, pairs, max_size=s.consolidation_max_cluster_size)
        selection = select_clusters(clustering.clusters, max_clusters=s.consolidation_max_clusters)
    report.memories, report.share_before = len(memories), round(clustering.share.value, 4)
    report.exact_groups, report.clusters = len(clustering.exact), len(clustering.clusters)
    report.clusters_sent, report.clusters_deferred = len(selection.sent), len(selection.deferred)
    report.clusters_settled = len(selection.settled)
    report.cluster_view = cluster_view(selection)
    reply: ReplyResult | None = None
    #: canonical texts' vectors computed by the guard, reused by the write (no second call)
    prepared: dict[str, list[float]] = {}
    if selection.sent:
        with timed(report, "llm"):
            reply = _ask(c, selection, report, prepared)
        if reply.status == "unparseable":
            report.outcome, report.error = "unparseable", reply.error
            if not dry_run:
                with c.engine.begin() as conn:
                    state_sql.record_failure(conn, user_id, outcome="unparseable",
                                             error=reply.error, before=report.share_before)
            log.warning("consolidation reply for user %s unparseable: %s", user_id, reply.error)
            return report
    plan = build_plan(clustering, selection, reply, new_id=new_id)
    by_id = {m.id: m for m in memories}
    report.changes = [describe(step, by_id) for step in plan.steps]
    if dry_run:
        report.outcome = "dry_run"
        report.merged, report.superseded = plan.merged, plan.superseded
        report.canonical_written = len(plan.new_rows)
        return report
    vectors: dict[uuid.UUID, list[float]] = {}
    if plan.new_rows:
        with timed(report, "embed"):
            vectors = _embed(c, plan, report, prepared)
    with timed(report, "write"):
        _write(c, user_id, read, plan, vectors, report, keep_claim_on_backlog)
    return report


def _ask(c: Consolidator, selection: Selection, report: ConsolidationReport,
         prepared: dict[str, list[float]]) -> ReplyResult:
    request = build_request(selection.sent, datetime.now(UTC).date())
    completion = c.llm.complete(c.prompt.system, request,
                                max_tokens=c.settings.consolidation_max_tokens)
    report.llm_calls += 1
    report.model, report.raw_reply = completion.model, completion.text
    report.prompt_tokens += completion.prompt_tokens
    report.completion_tokens += completion.completion_tokens
    reply = parse_reply(completion.text, selection.sent)
    if reply.status == "unparseable" and completion.truncated:
        return ReplyResult("unparseable", error="reply cut off at CONSOLIDATION_MAX_TOKENS "
                           f"({c.settings.consolidation_max_tokens}) before it was complete")
    reply = _guard_canonicals(c, reply, report, prepared)
    report.rejected = [{"cluster": r.cluster, "reason": r.reason} for r in reply.rejected]
    return reply


def _guard_canonicals(c: Consolidator, reply: ReplyResult, report: ConsolidationReport,
                      prepared: dict[str, list[float]]) -> ReplyResult:
    """The memory guard on every canonical text, judged like a candidate (rules and secrets,
    the meaning layer on the canonical's embedding, kept for the write: no extra call, then
    the LLM second opinion when configured): a cluster whose canonical
    fails it is rejected (its members stay as they are) and counted by reason; its text is
    never logged."""
    texts = [strip_invisible(d.canonical.content) for d in reply.decisions
             if d.canonical is not None]
    # judged exactly like a candidate: the same layers, the LLM second opinion included
    screening = screen_texts(c.settings, c.engine, c.embedder, texts, llm=c.llm,
                             need_vectors=not report.dry_run)
    report.prompt_tokens += screening.prompt_tokens  # the second opinion's, if it was asked
    report.completion_tokens += screening.completion_tokens
    if screening.pending:  # no meaning model yet: no canonical text is written unjudged
        screening.verdicts = [v if not v.ok else Verdict(False, "unscreened", None, "meaning")
                              for v in screening.verdicts]
    if screening.embeddings is not None:
        report.embedding_calls += 1
        report.embedding_tokens += screening.embeddings.total_tokens
    prepared.update({texts[i]: v for i, v in screening.vectors.items()
                     if screening.verdicts[i].ok})
    decisions, rejected = [], list(reply.rejected)
    n = -1
    for decision in reply.decisions:
        canonical = decision.canonical
        if canonical is None:
            decisions.append(decision)
            continue
        n += 1
        verdict = screening.verdicts[n]
        if verdict.ok:
            decisions.append(replace(decision,
                                     canonical=canonical.model_copy(update={"content": texts[n]})))
            continue
        reason = verdict.reason or "unknown"
        report.guard_dropped[reason] = report.guard_dropped.get(reason, 0) + 1
        rejected.append(Rejection(decision.cluster.number,
                                  f"canonical memory dropped by the memory guard ({reason})"))
    if report.guard_dropped:
        metrics.record_guard_drops("consolidate", report.guard_dropped)
    return replace(reply, decisions=tuple(decisions),
                   rejected=tuple(sorted(rejected, key=lambda r: r.cluster)))


def _embed(c: Consolidator, plan: Plan, report: ConsolidationReport,
           prepared: dict[str, list[float]]) -> dict[uuid.UUID, list[float]]:
    """The new rows' vectors: those the guard already computed, the rest in one call."""
    prepared = dict(prepared)
    rows = plan.new_rows
    missing = [r for r in rows if r.content not in prepared]
    if missing:
        result = c.embedder.embed([r.content for r in missing], input_type="document")
        report.embedding_calls += 1
        report.embedding_tokens += result.total_tokens
        if len(result.vectors) != len(missing):
            raise PermanentError(f"embedding returned {len(result.vectors)} vectors for "
                                 f"{len(missing)} texts", provider="embedding")
        prepared.update({r.content: v for r, v in zip(missing, result.vectors, strict=True)})
    return {r.id: prepared[r.content] for r in rows}


def _share_after(conn: Connection, memories: list[Memory], pairs: list[Pair],
                 applied: list[Step], similarity: float) -> float:
    """The share over the same memories as the share before, as they are now: survivors and
    the canonical rows written, the read's pairs minus what was replaced, plus the canonical
    rows' pairs among them (no read of the rest of the user)."""
    replaced = {ch.memory_id for st in applied for ch in st.changes}
    survivors = [m for m in memories if m.id not in replaced]
    canonical = [Memory(st.new_row.id, st.new_row.content, st.new_row.category,
                        st.new_row.created_at, st.new_row.importance, st.new_row.instance_id,
                        True) for st in applied if st.new_row is not None]
    kept_pairs = [(a, b) for a, b in pairs if a not in replaced and b not in replaced]
    new_pairs = sql.pairs_between(conn, [m.id for m in canonical],
                                  [m.id for m in (*survivors, *canonical)],
                                  similarity=similarity)
    return near_dup_share([*survivors, *canonical], [*kept_pairs, *new_pairs]).value


def _write(c: Consolidator, user_id: uuid.UUID, read: Read, plan: Plan,
           vectors: dict[uuid.UUID, list[float]], report: ConsolidationReport,
           keep_claim_on_backlog: bool) -> None:
    s = c.settings
    memories, pairs, claim = read.memories, read.pairs, read.claim
    pass_id = str(uuid.uuid4())
    with c.engine.begin() as conn:
        if not write_sql.try_lock(conn, user_id):
            report.outcome = "busy"
            log.info("user %s: another consolidation pass holds the lock; leaving it", user_id)
            return
        if not state_sql.claim_held(conn, user_id, claim):
            # the user was forgotten (or re-claimed) since this pass began: commit nothing
            report.outcome = "claim_lost"
            log.info("user %s: consolidation claim lost (forgotten or re-claimed); nothing"
                     " written", user_id)
            return
        required = sorted({i for step in plan.steps for i in step.requires}, key=str)
        # the rows still current, locked, with their provenance: each result carries the
        # union of its members' sources (read under the row locks, so no member changes
        # before the commit)
        members = write_sql.lock_current(conn, required)
        ready = [all(i in members for i in st.requires) for st in plan.steps]
        applied = [st for st, ok in zip(plan.steps, ready, strict=True) if ok]
        # by position, not ``st not in applied``: comparing the steps (frozen dataclasses,
        # field by field) made this quadratic, ~20 ms a pass of ~50 steps
        skipped = [st for st, ok in zip(plan.steps, ready, strict=True) if not ok]
        sources = {st.result_id: merged(members.get(i) for i in st.requires)
                   for st in applied if st.result_id is not None}
        canonical = [(st.new_row, vectors[st.new_row.id]) for st in applied
                     if st.new_row is not None]
        write_sql.insert_canonical(conn, user_id, canonical,
                             model=s.consolidation_model_name, prompt_version=c.prompt.version,
                             embedding_model=c.embedder.name,
                             pass_id=pass_id, sources=sources)
        changes = [ch for st in applied for ch in st.changes]
        write_sql.apply_changes(conn, changes)
        untouchable = {i for st in skipped for i in st.requires}
        # the kept rows, each rewritten once: a kept result's provenance and importance, and
        # the judged stamp of the judged rows still current
        write_sql.update_kept(conn, sources=[(st.result_id, sources[st.result_id]) for st in applied
                                       if st.new_row is None and st.result_id is not None],
                        importance=[st.importance for st in applied if st.importance],
                        seen=sorted(plan.judged - untouchable, key=str))
        # the result of a merge keeps the most sensitive label of what went into it
        write_sql.keep_most_sensitive(conn, [(st.result_id, ch.memory_id) for st in applied
                                       if st.result_id is not None for ch in st.changes])
        # ... and the turns it cites (the union of its members') take that label
        turn_trust_sql.inherit_labels(conn, sorted({st.result_id for st in applied
                                               if st.result_id is not None}, key=str))
        # compared, in one statement: the canonical rows (their neighbourhood was the
        # cluster; overflow members come back and meet them), the members replaced (nothing
        # compares them again) and the chunk, except what waits for another call (deferred
        # clusters, a cluster's overflow — back to "not compared", so the next pass finds
        # them again) and what a concurrent pass holds (it decides those)
        chunk = set(read.chunk) - plan.unresolved - untouchable
        sql.stamp_compared(conn, sorted({*(row.id for row, _ in canonical),
                                         *(ch.memory_id for ch in changes), *chunk}, key=str))
        sql.uncompare(conn, sorted(plan.unresolved - untouchable, key=str))
        report.share_after = round(_share_after(conn, memories, pairs, applied,
                                                s.consolidation_similarity), 4)
        report.merged = sum(st.merged for st in applied)
        report.superseded = sum(st.superseded for st in applied)
        report.canonical_written = sum(1 for st in applied if st.new_row is not None)
        report.steps_skipped = len(skipped)
        run = {"pass": pass_id, "share_before": report.share_before,
               "share_after": report.share_after, "merged": report.merged,
               "superseded": report.superseded}
        write_sql.insert_history(conn, user_id, [h for st in applied for h in st.history],
                           model=report.model, run=run)
        report.outcome = "consolidated" if applied else "nothing_to_do"
        if report.rejected:
            report.error = f"{len(report.rejected)} of {report.clusters_sent} clusters " \
                "rejected: " + "; ".join(f"cluster {r['cluster']}: {r['reason']}"
                                         for r in report.rejected)[:1800]
        report.backlog = state_sql.finish_pass(
            conn, user_id, before=report.share_before, after=report.share_after,
            merged=report.merged, superseded=report.superseded, outcome=report.outcome,
            error=report.error, keep_claim_on_backlog=keep_claim_on_backlog)
    log.info("user %s consolidated: merged=%d superseded=%d share %.3f -> %.3f", user_id,
             report.merged, report.superseded, report.share_before, report.share_after)
