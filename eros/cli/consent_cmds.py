"""Consent: ``eros consent`` shows and lifts a user's withdrawn special-category
labels, ``eros relabel`` labels memories written without a label (before migration 0018).
Ids, labels and counts only."""

from __future__ import annotations

import json
import uuid

import click

from eros.cli import main
from eros.core.sensitivity import (
    LABELLERS,
    MODEL_LABELLER,
    OFFLINE_LABELLER,
    RELABEL_BATCH,
    RELABEL_BATCH_MAX,
    SENSITIVITY_LABELS,
)


@main.command()
@click.argument("user", type=click.UUID)
@click.option("--allow", "allow", type=click.Choice(["all", *SENSITIVITY_LABELS]), default=None,
              help="Lift the user's withdrawal of this label ('all': every label): memories "
                   "with it are stored again from the next extraction on (the same as the "
                   "task eros.allow_sensitive).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
def consent(user: uuid.UUID, allow: str | None, as_json: bool) -> None:
    """The special-category labels USER withdrew consent for (each recorded by `eros forget
    USER --sensitive [LABEL]`): the extraction drops candidates with them, counted in
    eros_sensitive_withheld_total. --allow LABEL lifts one."""
    from eros.cli._common import runtime
    from eros.privacy.db.consent_sql import withheld
    from eros.privacy.services.consent import allow_sensitive

    with runtime() as rt:
        lifted = allow_sensitive(rt.engine, user, allow)["allowed"] if allow else None
        with rt.engine.connect() as conn:
            rows = withheld(conn, user)
    if as_json:
        click.echo(json.dumps({"user_id": str(user), "allowed": lifted, "withheld": [
            {"label": r["label"], "withheld_at": r["withheld_at"].isoformat(),
             "erasure_id": r["erasure_id"]} for r in rows]}, indent=2))
        return
    if lifted is not None:
        click.echo(f"allowed again: {', '.join(lifted) or 'nothing was withheld'}")
    if not rows:
        click.echo(f"user {user}: no label withheld")
    for r in rows:
        click.echo(f"{r['label']:<10} withheld since {r['withheld_at']:%Y-%m-%d %H:%M:%S}"
                   f" (erasure {r['erasure_id'] or '-'})")


@main.command()
@click.option("--labeller", type=click.Choice(LABELLERS), default=OFFLINE_LABELLER,
              show_default=True,
              help="offline: cue words (en/zh), free. model: DREAMING_MODEL at "
                   "OPENROUTER_BASE_URL (needs OPENROUTER_API_KEY), 20 memories a call, through "
                   "the global LLM limits and costed; an entry of its reply that cannot be "
                   "read leaves that memory unlabelled (counted: unreadable).")
@click.option("--batch", type=click.IntRange(1, RELABEL_BATCH_MAX), default=RELABEL_BATCH,
              show_default=True,
              help="Memories (then turns) per transaction (the cursor is committed with "
                   "each); with --labeller model at most 20, one model call each.")
@click.option("--max-batches", type=click.IntRange(min=1), default=None,
              help="Stop after this many batches, memories' and turns' together (run again "
                   "to resume).")
@click.option("--restart", is_flag=True, help="Start over from the first memory and turn.")
@click.option("--json", "as_json", is_flag=True, help="Print the progress as JSON.")
def relabel(labeller: str, batch: int, max_batches: int | None, restart: bool,
            as_json: bool) -> None:
    """Label memories written without a special-category label (before migration 0018) with
    the offline labeller (cue words, en/zh) or the model (--labeller model), then the indexed
    turns (engine.memory_turns): a turn takes the most sensitive of its own label, the
    labeller's (the model is asked only about unlabelled turns) and the labels of the
    memories citing it. Only adds labels, never removes one; a memory or turn labelled with
    a label its user withheld is erased as `eros forget USER --sensitive LABEL` erases.
    Resumable: each labeller's cursors live in engine.relabel_progress (LABELLER and
    LABELLER:turns); a stopped run goes on where it was. The same as the task
    eros.relabel_sensitivity."""
    from eros.cli._common import runtime
    from eros.privacy.services.consent import relabel as run
    from eros.privacy.tasks.purge import purge_for_process

    with runtime() as rt:
        llm = limiter = None
        if labeller == MODEL_LABELLER:
            from eros.providers import make_providers
            from eros.providers.ratelimit import make_limiter

            llm, _ = make_providers(rt.settings)
            limiter = make_limiter(rt.settings)
        result = run(rt.engine, batch=batch, max_batches=max_batches, restart=restart,
                     labeller=labeller,  # type: ignore[arg-type]
                     settings=rt.settings, llm=llm, limiter=limiter,
                     after_erasure=lambda erasure_id: purge_for_process(rt.settings, rt.engine,
                                                                        erasure_id))
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo("relabel: " + ", ".join(f"{k}={v}" for k, v in result.items()))
