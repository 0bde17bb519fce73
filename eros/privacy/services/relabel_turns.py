"""``eros relabel`` over the turns recall layer: after the memories, the
labeller's scan goes over the indexed turns (``engine.memory_turns``), so a turn indexed
before a label reached it still ends up with the label it should carry.

A turn's label is the most sensitive of its own, the labeller's for its text and those of
the user's memories citing it (``source_seqs``;
:func:`eros.recall.db.turn_trust_sql.relabel_turns`).
The offline labeller (cue words, free) reads every turn; the model reads the turns still
unlabelled, :data:`~eros.privacy.core.relabel_reply.CALL_SIZE` a call (the memory scan's prompt, its
limits and costing). Labels are only raised, never removed.

Resumable like the memory scan, on its own cursor: ``relabel_progress`` row
``<labeller>:turns`` (``after_seq``, 0027), turns indexed before the run began (later ones
were labelled when they were indexed). Each batch is read in one short transaction, labelled
outside any transaction (the model is never asked with a lock held) and written in a second
one — only if the cursor has not moved meanwhile (another run took these turns: this answer
is dropped). A turn about a label its user withheld (``forget --sensitive``) — its new label,
or the labeller's under a more sensitive one — is erased the way the memories' scan erases:
``erase(user, label, seqs)``, after its batch committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from eros.privacy.db import consent_sql
from eros.recall.db import turn_trust_sql

#: labels for texts, in order (None: no special category, or unreadable)
Label = Callable[[list[str]], Sequence[str | None]]


def key(labeller: str) -> str:
    """The turn scan's progress row for ``labeller``."""
    return f"{labeller}:turns"


@dataclass
class TurnRun:
    """What one turn scan did: turns read and relabelled, batches, answers dropped."""

    scanned: int = 0
    labelled: int = 0
    batches: int = 0
    dropped_batches: int = 0


def start(engine: Engine, labeller: str, *, restart: bool) -> None:
    with engine.begin() as conn:
        consent_sql.start(conn, key(labeller), restart=restart)


#: ``erase(user, label, seqs)``: a ``forget --sensitive label`` of the user that also erases
#: these turns (about the label, though labelled with a more sensitive one)
Erase = Callable[[uuid.UUID, str, Sequence[int]], object]


def run(engine: Engine, labeller: str, label: Label, *, batch: int, max_batches: int | None,
        ask_labelled: bool, erase: Erase) -> tuple[TurnRun, bool]:
    """Scan from the cursor on, ``batch`` turns a batch, at most ``max_batches``; the run's
    figures and whether the scan is done. ``label`` is asked about every turn read
    (``ask_labelled``) or only the unlabelled ones."""
    k = key(labeller)
    result, done = TurnRun(), False
    while max_batches is None or result.batches < max_batches:
        with engine.begin() as conn:
            state = consent_sql.lock(conn, k)
            if state.done_at is not None:
                return result, True
            rows = turn_trust_sql.scan_turns(conn, after=state.after_seq or 0,
                                             cutoff=state.cutoff, n=batch)
        asked = [r for r in rows if ask_labelled or r.sensitivity is None]
        found = list(label([r.content for r in asked])) if asked else []
        given: dict[int, Any] = {r.seq: lab for r, lab in zip(asked, found, strict=True)}
        with engine.begin() as conn:
            now = consent_sql.lock(conn, k)
            if now.after_seq != state.after_seq or now.done_at is not None:
                result.batches += 1
                result.dropped_batches += 1 if rows else 0
                continue
            changed = turn_trust_sql.relabel_turns(conn, [(r.seq, given.get(r.seq))
                                                          for r in rows])
            hits = _withheld(conn, rows, given, changed)
            done = len(rows) < batch
            consent_sql.advance_turns(conn, k, after=rows[-1].seq if rows else None,
                                      scanned=len(rows), labelled=len(changed), done=done)
        result.scanned += len(rows)
        result.labelled += len(changed)
        result.batches += 1
        for (user_id, hit), seqs in hits.items():  # after the batch committed: one erasure
            erase(user_id, hit, seqs)
        if done:
            break
    return result, done


def _withheld(conn: Connection, rows: Sequence[turn_trust_sql.ScannedTurn],
              given: Mapping[int, str | None], changed: Sequence[turn_trust_sql.Relabelled]
              ) -> dict[tuple[uuid.UUID, str], list[int]]:
    """(user, label) -> the batch's turns about a label their user withheld: labelled with it
    now, or by the labeller under a more sensitive label (a turn keeps only its most
    sensitive one, which the label's erasure would not find)."""
    about: dict[tuple[uuid.UUID, str], set[int]] = {}
    for c in changed:
        about.setdefault((c.user_id, c.sensitivity), set()).add(c.seq)
    for r in rows:
        label = given.get(r.seq)
        if label is not None:
            about.setdefault((r.user_id, label), set()).add(r.seq)
    hits = consent_sql.withheld_pairs(conn, sorted(about, key=str))
    return {hit: sorted(about[hit]) for hit in hits}


def totals(engine: Engine, labeller: str) -> dict[str, int]:
    """The turn scan's figures over the whole run (since the last restart)."""
    with engine.connect() as conn:
        row = consent_sql.progress(conn, key(labeller))
    if row is None:
        return {"total_turns_scanned": 0, "total_turns_labelled": 0}
    return {"total_turns_scanned": int(row["scanned"]),
            "total_turns_labelled": int(row["labelled"])}
