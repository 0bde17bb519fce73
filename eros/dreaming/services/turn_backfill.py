"""``eros turns backfill``: index the turns of sessions classified before
classification indexed turns itself.

Resumable: the cursor (``engine.turn_backfill``, the last seq scanned and the run's cutoff) is
committed with each batch's rows, so a stopped run — ``--limit``, a crash, Ctrl-C — goes on
where it was, and a second run over what is done writes nothing (a turn already indexed is
skipped, then left alone). Batched: one embedding request a batch (``--batch`` turns, at most
the provider's 1,000 inputs), through the same global EMBEDDING_* limits as classify (a
throttled batch waits; a transient error is retried a few times, then the run stops and can
be resumed). Each turn is screened, labelled and written exactly as classify writes it
(:mod:`eros.dreaming.services.turn_index`), under its user's erasure lock and behind the same fence
(:mod:`eros.recall.db.turn_write_sql`): never a turn a forget took out, never one its classification
did not read. ``dry_run`` embeds and judges but writes nothing, not even the cursor. Counts
only, never text.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine

from eros.core.cost import Prices, cost_usd
from eros.dreaming.services import turn_index
from eros.dreaming.services.turn_index import TurnCounts, TurnText, judged_text, labelled
from eros.errors import TransientError
from eros.guard.services.guard_model import TURN_EMBED_CHARS, Screening, screen_texts
from eros.ops import metrics
from eros.providers.base import ChatCompleter, Embedder
from eros.providers.ratelimit import Limiter, NoLimits, Throttled
from eros.recall.db import turn_backfill_sql as sql
from eros.recall.db import turn_write_sql
from eros.settings import Settings

log = logging.getLogger(__name__)

#: turns per batch by default (one embedding request each)
BATCH = 200
#: transient provider errors retried in a row before the run stops (resumable)
MAX_TRANSIENT = 5


@dataclass
class BackfillReport:
    """This call's work (counts only) and the cursor after it."""

    scanned: int = 0
    indexed: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    withheld: int = 0
    batches: int = 0
    embedding_requests: int = 0
    embedding_tokens: int = 0
    cost_usd: float = 0.0
    done: bool = False
    dry_run: bool = False
    #: the cursor (``after_seq``, ``cutoff_seq``, totals, times); None on a dry run's first go
    progress: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def backfill(settings: Settings, engine: Engine, embedder: Embedder, *,
             llm: ChatCompleter | None = None, limiter: Limiter | None = None,
             limit: int | None = None, batch: int = BATCH, dry_run: bool = False,
             restart: bool = False, sleep: Callable[[float], None] = time.sleep,
             ) -> BackfillReport:
    """Index up to ``limit`` more turns (all when None), ``batch`` at a time."""
    limiter = limiter or NoLimits()
    # the second opinion is asked only where classify would ask it
    if llm is not None and (llm.offline or settings.memory_guard_llm != "on"):
        llm = None
    report = BackfillReport(dry_run=dry_run)
    if not dry_run:
        with engine.begin() as conn:
            sql.start(conn, restart=restart)
    with engine.connect() as conn:
        state = sql.progress(conn)
        after = 0 if state is None or restart else state.after_seq
        cutoff = state.cutoff_seq if state is not None and not restart \
            else sql.newest_seq(conn)
    done = state is not None and state.done_at is not None and not restart
    counts = TurnCounts()
    prices = Prices(settings.llm_price_input_per_mtok, settings.llm_price_output_per_mtok,
                    settings.embedding_price_per_mtok)
    while not done and (limit is None or report.scanned < limit):
        n = batch if limit is None else min(batch, limit - report.scanned)
        with engine.connect() as conn:
            rows = sql.next_turns(conn, after=after, cutoff=cutoff,
                                  channels=settings.channels, n=n)
            seqs = [int(r.seq) for r in rows]
            cited = sql.cited_labels(conn, seqs, sorted({r.session_id for r in rows}))
            held = sql.withheld(conn, {r.user_id for r in rows})
        done = len(rows) < n
        where = {int(r.seq): (r.session_id, r.user_id, r.instance_id) for r in rows}
        turns = _turns(rows, cited, held, counts)
        screening = _screen(settings, engine, embedder, llm, limiter, turns, sleep) \
            if turns else Screening([])
        report.embedding_requests += screening.requests
        tokens = screening.embeddings.total_tokens if screening.embeddings else 0
        report.embedding_tokens += tokens
        spent = cost_usd(prices, prompt_tokens=screening.prompt_tokens,
                         completion_tokens=screening.completion_tokens,
                         embedding_tokens=tokens, llm_offline=llm is None or llm.offline,
                         embedder_offline=embedder.offline)
        report.cost_usd = round(report.cost_usd + spent, 8)
        metrics.record_spend(embedding_tokens=tokens, prompt_tokens=screening.prompt_tokens,
                             completion_tokens=screening.completion_tokens, cost=spent)
        write = turn_index.turn_rows(turns, screening, 0, session_of=where, counts=counts)
        last = seqs[-1] if seqs else after
        report.batches += bool(rows)
        if dry_run:
            counts.statuses.update(Counter(r.status for r in write))
            report.scanned += len(rows)
            after = last
            continue
        with engine.begin() as conn:
            moved = sql.lock(conn)
            if moved.after_seq != after:  # another run wrote this range meanwhile: skip it
                after, done = moved.after_seq, moved.done_at is not None
                conn.rollback()
                continue
            labels = {t.seq: t.labels for t in turns}
            users = {r.user_id for r in write}
            sql.lock_users(conn, users)
            now_held = sql.withheld(conn, users)  # a forget --sensitive meanwhile
            write = [r for r in write if not labels[r.seq] & now_held.get(r.user_id, set())]
            written = turn_write_sql.write_fenced(conn, write)
            sql.advance(conn, after=last, scanned=len(rows), indexed=sum(written.values()),
                        done=done)
        counts.statuses.update(written)
        turn_index.record("backfill", TurnCounts(statuses=written))
        report.scanned += len(rows)
        after = last
    report.done = done
    report.statuses = dict(counts.statuses)
    report.indexed = 0 if dry_run else sum(counts.statuses.values())
    report.dropped, report.withheld = dict(counts.dropped), counts.withheld
    metrics.record_guard_drops("turn", dict(counts.dropped))
    with engine.connect() as conn:
        state = sql.progress(conn)
    report.progress = state.as_dict() if state is not None else None
    log.info("turns backfill: scanned=%d indexed=%d dropped=%d withheld=%d batches=%d "
             "embedding_requests=%d embedding_tokens=%d done=%s dry_run=%s", report.scanned,
             report.indexed, sum(counts.dropped.values()), counts.withheld, report.batches,
             report.embedding_requests, report.embedding_tokens, done, dry_run)
    return report


def _turns(rows: Sequence[Any], cited: dict[int, set[str]],
           held: dict[uuid.UUID, set[str]], counts: TurnCounts) -> list[TurnText]:
    """The batch's turns as classify judges them, labelled; withheld and empty ones out."""
    out: list[TurnText] = []
    for r in rows:
        text = judged_text(r.content, r.channel)
        if not text:
            continue
        kept, withheld = labelled([TurnText(int(r.seq), r.sent_at, text)], cited,
                                  held.get(r.user_id, set()))
        counts.withheld += withheld
        out.extend(kept)
    counts.read += len(out)
    return out


def _screen(settings: Settings, engine: Engine, embedder: Embedder,
            llm: ChatCompleter | None, limiter: Limiter, turns: Sequence[TurnText],
            sleep: Callable[[float], None]) -> Screening:
    """One batch through the guard and one embedding request, within the global limits."""
    texts = [t.text for t in turns]
    tokens = sum(min(len(t), TURN_EMBED_CHARS) // 4 + 1 for t in texts)
    failures = 0
    while True:
        try:
            limiter.reserve("embedding", tokens=tokens)
            with limiter.slots("llm", "embedding") if llm is not None \
                    else limiter.slot("embedding"):
                return screen_texts(settings, engine, embedder, [], llm=llm, turns=texts)
        except Throttled as err:
            sleep(err.wait)
        except TransientError as err:
            failures += 1
            if failures > MAX_TRANSIENT:
                raise
            sleep(max(min(60.0, 2.0 ** failures), err.retry_after or 0.0))
