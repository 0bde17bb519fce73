"""Consent that lasts (issue 32). ``forget --sensitive LABEL`` records that the label is not to
be stored again for that user (:mod:`eros.services.forget`, in the erasure's transaction);
the extraction then drops such candidates (:func:`drop_withheld`, counted in
``eros_sensitive_withheld_total{label}``) until the product lifts the withdrawal
(:func:`allow_sensitive`: ``eros consent USER --allow LABEL``, task ``eros.allow_sensitive``).

:func:`relabel` labels rows written without a label (before migration 0018) with the offline
labeller (cue words, :mod:`eros.providers.offline.sensitivity`): in id order, one batch per
transaction, the cursor committed with each batch (``engine.relabel_progress``), so a run
that stops resumes where it was. It only adds labels, never removes one. A row it labels with
a label its user has withheld is then erased as ``forget --sensitive LABEL`` erases (recorded
in ``erasure_log`` with scope ``sensitive``): the withdrawal covers the old rows too.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine

from eros.core.parsing import Candidate
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.db import consent_sql
from eros.ops import metrics
from eros.providers.offline.sensitivity import sensitivity_label
from eros.services import forget

log = logging.getLogger(__name__)

#: the labeller :func:`relabel` uses (its progress row's key).
OFFLINE = "offline"


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


def relabel(engine: Engine, *, batch: int = 1000, max_batches: int | None = None,
            restart: bool = False) -> dict[str, Any]:
    """Label unlabelled memories created before the run began (offline labeller), resuming
    from the stored cursor; ``max_batches`` bounds this call (a task's time budget). The
    progress: ``scanned``, ``labelled`` (this call and in total), ``done``."""
    with engine.begin() as conn:
        consent_sql.start(conn, OFFLINE, restart=restart)
    scanned = labelled = batches = erased = 0
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
            hits = consent_sql.withheld_hits(conn, ids)
            n = len(ids)
            done = len(rows) < batch
            total = consent_sql.advance(conn, OFFLINE, after=rows[-1].id if rows else None,
                                        scanned=len(rows), labelled=n, done=done)
        scanned, labelled, batches = scanned + len(rows), labelled + n, batches + 1
        for user_id, hit in hits:  # after the batch committed: one erasure each
            erased += forget.forget_sensitive(engine, user_id, hit)["memories"]
        if done:
            break
    with engine.connect() as conn:
        total = consent_sql.progress(conn, OFFLINE)
    assert total is not None
    log.info("relabel: scanned=%d labelled=%d total_scanned=%d total_labelled=%d done=%s",
             scanned, labelled, total["scanned"], total["labelled"], done)
    return {"scanned": scanned, "labelled": labelled, "erased": erased,
            "total_scanned": int(total["scanned"]),
            "total_labelled": int(total["labelled"]), "done": done}
