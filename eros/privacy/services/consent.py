"""Consent that lasts. ``forget --sensitive LABEL`` records that the label is not to
be stored again for that user (:mod:`eros.privacy.services.forget`, in the erasure's transaction);
the extraction then drops such candidates (:func:`drop_withheld`, counted in
``eros_sensitive_withheld_total{label}``) until the product lifts the withdrawal
(:func:`allow_sensitive`: ``eros consent USER --allow LABEL``, task ``eros.allow_sensitive``).

:func:`relabel` labels rows written without a label (before migration 0018) with the offline
labeller (cue words, :mod:`eros.providers.offline.sensitivity`) or the model
(:mod:`eros.privacy.services.relabel_model`): in id order, one batch per transaction, the cursor
committed with each batch (``engine.relabel_progress``, one row per labeller), so a run that
stops resumes where it was. It only adds labels, never removes one. A row it labels with
a label its user has withheld is then erased as ``forget --sensitive LABEL`` erases (recorded
in ``erasure_log`` with scope ``sensitive``): the withdrawal covers the old rows too.
The indexed turns follow: the turns a memory it labels cites take the label
in the same transaction, and once the memories are done the same labeller scans the turns
(:mod:`eros.privacy.services.relabel_turns`, a cursor of its own).
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Final

from sqlalchemy import Engine

from eros.core.sensitivity import (
    OFFLINE_LABELLER,
    RELABEL_BATCH,
    SENSITIVITY_LABELS,
    Labeller,
)
from eros.errors import ConfigError
from eros.memory.core.parsing import Candidate
from eros.ops import metrics
from eros.privacy.core.relabel_reply import CALL_SIZE
from eros.privacy.db import consent_sql
from eros.privacy.services import forget, relabel_model, relabel_turns
from eros.providers.base import ChatCompleter
from eros.providers.offline.sensitivity import sensitivity_label
from eros.providers.ratelimit import Limiter, NoLimits
from eros.recall.db import turn_trust_sql
from eros.settings import Settings

log = logging.getLogger(__name__)

#: the labellers :func:`relabel` offers (each its progress row's key).
OFFLINE: Final = OFFLINE_LABELLER
MODEL: Final = relabel_model.MODEL


def labels_of(label: str | None) -> list[str]:
    """One label, or every label for None / ``"all"``; ValueError for an unknown one."""
    if label is None or label == "all":
        return list(SENSITIVITY_LABELS)
    if label not in SENSITIVITY_LABELS:
        raise ValueError(f"unknown sensitivity label {label!r}; expected one of "
                         f"{', '.join(SENSITIVITY_LABELS)} or 'all'")
    return [label]


def drop_withheld(candidates: Sequence[Candidate],
                  withheld: frozenset[str]) -> tuple[list[Candidate], dict[str, int]]:
    """The candidates whose label the user has not withheld, and how many were dropped by
    label (counted in the metric here; never their text)."""
    if not withheld:
        return list(candidates), {}
    kept = [c for c in candidates if c.sensitivity not in withheld]
    dropped = Counter(str(c.sensitivity) for c in candidates if c.sensitivity in withheld)
    metrics.record_withheld(dict(dropped))
    return kept, dict(dropped)


def allow_sensitive(engine: Engine, user_id: uuid.UUID, label: str | None) -> dict[str, Any]:
    """Lift the user's withdrawal for ``label`` (None / ``"all"``: every label): candidates
    with it are stored again from the next extraction on. Idempotent."""
    with engine.begin() as conn:
        lifted = consent_sql.allow(conn, user_id, labels_of(label))
    log.info("consent: user=%s labels allowed again=%s", user_id, ",".join(lifted) or "-")
    return {"allowed": lifted}


def relabel(engine: Engine, *, batch: int = RELABEL_BATCH, max_batches: int | None = None,
            restart: bool = False, labeller: Labeller = OFFLINE,
            settings: Settings | None = None, llm: ChatCompleter | None = None,
            limiter: Limiter | None = None,
            after_erasure: Callable[[int], object] | None = None) -> dict[str, Any]:
    """Label unlabelled memories created before the run began, then the indexed turns
    (:mod:`eros.privacy.services.relabel_turns`), resuming from the stored cursors (each labeller
    has
    its own pair); ``max_batches`` bounds this call (a task's time budget), both scans
    together. ``labeller``: ``offline`` (cue words) or ``model`` (``llm``, a live model,
    through ``limiter``: :mod:`eros.privacy.services.relabel_model`). The turns a newly labelled
    memory cites take its label at once. The progress: ``scanned``, ``labelled`` (memories,
    this call and in total), ``turns_scanned``, ``turns_labelled`` (turns whose label this call
    raised), ``total_turns_scanned``, ``total_turns_labelled``, ``erased`` (memories) and
    ``turns_erased`` (turn vectors), ``done`` (both scans); the model's run adds
    ``unreadable``, ``calls``, tokens and ``cost_usd``. ``after_erasure(erasure_id)`` runs
    after each erasure of a withheld label (the caller purges the user's stored recall
    results, as after every forget)."""
    erased_turns = Counter[str]()

    def erase_all(user_id: uuid.UUID, label: str, turns: Sequence[int] = ()) -> dict[str, Any]:
        counts = forget.forget_sensitive(engine, user_id, label, turns=turns)
        erased_turns["turns"] += int(counts["indexed_turns"])
        if after_erasure is not None:
            after_erasure(counts["erasure_id"])
        return counts

    def erase(user_id: uuid.UUID, label: str) -> int:
        return int(erase_all(user_id, label)["memories"])

    if labeller == MODEL:
        if settings is None or llm is None or llm.offline:
            raise ConfigError("the model labeller needs a live LLM: set OPENROUTER_API_KEY "
                              "(and not EROS_PROVIDERS=offline)")
        return _relabel_with_model(engine, settings, llm, batch=batch, max_batches=max_batches,
                                   restart=restart, limiter=limiter, erase=erase,
                                   erase_all=erase_all, erased_turns=erased_turns)
    if labeller != OFFLINE:
        raise ValueError(f"unknown labeller {labeller!r}; expected {OFFLINE!r} or {MODEL!r}")
    with engine.begin() as conn:
        consent_sql.start(conn, OFFLINE, restart=restart)
    relabel_turns.start(engine, OFFLINE, restart=restart)
    scanned = labelled = batches = erased = inherited = 0
    done = False
    while max_batches is None or batches < max_batches:
        with engine.begin() as conn:
            state = consent_sql.lock(conn, OFFLINE)
            if state.done_at is not None:
                done = True
                break
            rows = consent_sql.batch(conn, after=state.after_id, cutoff=state.cutoff, n=batch)
            found = [(r.id, label) for r in rows
                     if (label := sensitivity_label(r.content)) is not None]
            ids = consent_sql.set_labels(conn, found)
            inherited += len(turn_trust_sql.inherit_labels(conn, ids))
            hits = consent_sql.withheld_hits(conn, ids)
            n = len(ids)
            done = len(rows) < batch
            consent_sql.advance(conn, OFFLINE, after=rows[-1].id if rows else None,
                                scanned=len(rows), labelled=n, done=done)
        scanned, labelled, batches = scanned + len(rows), labelled + n, batches + 1
        for user_id, hit in hits:  # after the batch committed: one erasure each
            erased += erase(user_id, hit)
        if done:
            break
    turns, turns_done = _turn_scan(engine, OFFLINE, _offline_labels, memories_done=done,
                                   batch=batch, left=_left(max_batches, batches),
                                   ask_labelled=True, erase=erase_all)
    return _report(engine, OFFLINE, scanned=scanned, labelled=labelled, erased=erased,
                   done=done and turns_done, turns_scanned=turns.scanned,
                   turns_labelled=inherited + turns.labelled, turns_erased=erased_turns["turns"])


def _offline_labels(texts: list[str]) -> list[str | None]:
    return [sensitivity_label(t) for t in texts]


def _left(max_batches: int | None, used: int) -> int | None:
    return None if max_batches is None else max_batches - used


def _turn_scan(engine: Engine, labeller: str, label: relabel_turns.Label, *,
               memories_done: bool, batch: int, left: int | None, ask_labelled: bool,
               erase: relabel_turns.Erase) -> tuple[relabel_turns.TurnRun, bool]:
    """The turn scan, once the memory scan is done (its labels are then on the memories the
    turns inherit from) and while this call's batches last."""
    if not memories_done or (left is not None and left <= 0):
        return relabel_turns.TurnRun(), False
    return relabel_turns.run(engine, labeller, label, batch=batch, max_batches=left,
                             ask_labelled=ask_labelled, erase=erase)


def _report(engine: Engine, labeller: str, *, scanned: int, labelled: int, erased: int,
            done: bool, **extra: Any) -> dict[str, Any]:
    with engine.connect() as conn:
        total = consent_sql.progress(conn, labeller)
    assert total is not None
    extra.update(relabel_turns.totals(engine, labeller))
    log.info("relabel (%s): scanned=%d labelled=%d total_scanned=%d total_labelled=%d done=%s"
             "%s", labeller, scanned, labelled, total["scanned"], total["labelled"], done,
             "".join(f" {k}={v}" for k, v in extra.items()))
    return {"scanned": scanned, "labelled": labelled, "erased": erased,
            "total_scanned": int(total["scanned"]),
            "total_labelled": int(total["labelled"]), "done": done, **extra}


def _relabel_with_model(engine: Engine, settings: Settings, llm: ChatCompleter, *, batch: int,
                        max_batches: int | None, restart: bool, limiter: Limiter | None,
                        erase: Callable[[uuid.UUID, str], int],
                        erase_all: relabel_turns.Erase,
                        erased_turns: Counter[str]) -> dict[str, Any]:
    with engine.begin() as conn:
        consent_sql.start(conn, MODEL, restart=restart)
    relabel_turns.start(engine, MODEL, restart=restart)
    limits = limiter or NoLimits()
    run, done = relabel_model.run_batches(
        engine, settings, llm, batch=batch, max_batches=max_batches, limiter=limits,
        erase=erase)
    turns, turns_done = _turn_scan(
        engine, MODEL, lambda texts: relabel_model.ask_labels(llm, texts, limits, run, settings),
        memories_done=done, batch=min(batch, CALL_SIZE), left=_left(max_batches, run.batches),
        ask_labelled=False, erase=erase_all)
    return _report(engine, MODEL, scanned=run.scanned, labelled=run.labelled, erased=run.erased,
                   done=done and turns_done, turns_scanned=turns.scanned,
                   turns_labelled=run.turns_labelled + turns.labelled,
                   turns_erased=erased_turns["turns"], unreadable=run.unreadable,
                   calls=run.calls, prompt_tokens=run.prompt_tokens,
                   completion_tokens=run.completion_tokens, cost_usd=run.cost_usd)
