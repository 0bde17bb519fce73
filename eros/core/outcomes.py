"""How a run ended, each word spelled once: a classify run, a consolidation pass, and the
``outcome`` of every task's result (what ``celery call``, the chat product and the CLI read
back). The words are stored (``classification_runs.outcome``,
``consolidation_state.last_outcome``) and exported as metric labels: add, never rename."""

from __future__ import annotations

from typing import Any, Literal

#: how a classify run ended (``classification_runs.outcome``, ``chat_sessions.last_outcome``,
#: ``eros_classify_outcomes{outcome}``; README "How a session is processed")
OutcomeKind = Literal["memories", "no_memories", "empty", "unparseable", "truncated", "retrying",
                      "permanent_error", "dead_letter"]

#: how a consolidation pass ended (its report, ``consolidation_state.last_outcome``,
#: ``eros_consolidation_runs{outcome}``): ``pending`` until it ends; ``consolidated`` or
#: ``nothing_to_do`` when it ran; ``dry_run``; ``busy`` (another pass holds the user's lock),
#: ``claim_lost``, ``guard_pending`` (the guard's model is not there yet), ``no_memories``;
#: ``unparseable`` (the model's reply), ``retrying``, ``gave_up``, ``permanent_error``.
ConsolidationOutcome = Literal["pending", "consolidated", "nothing_to_do", "dry_run", "busy",
                               "claim_lost", "guard_pending", "no_memories", "unparseable",
                               "retrying", "gave_up", "permanent_error"]

#: a task that did not run its service to the end: its arguments were invalid
#: (eros/tasks/args.py), the database failed past its retries, a provider refused for good.
#: The erasure and consent tasks say ``error`` for a failed database instead.
TaskFailure = Literal["invalid_argument", "database_error", "permanent_error", "error"]

#: every ``outcome`` a task's result carries: a classify run's, a consolidation pass's, a
#: failure, or one of the words of a task family (classify: ``skipped``, ``claim_lost``; the
#: screen of unscreened memories: ``stopped``; consent: ``allowed``, ``relabelled``; erasure:
#: ``forgotten``; re-embedding: ``busy``, ``finished``, ``continued``)
TaskOutcome = Literal[OutcomeKind, ConsolidationOutcome, TaskFailure, "skipped", "claim_lost",
                      "stopped", "allowed", "relabelled", "forgotten", "finished", "continued"]


def task_result(outcome: TaskOutcome, /, **fields: Any) -> dict[str, Any]:
    """A task's result: its ``outcome`` and the fields beside it (ids, counts, an error)."""
    return {"outcome": outcome, **fields}
