"""Acting on sessions by hand: ``sweep`` (one claim now), ``classify`` (one session,
in-process) and ``requeue`` (make sessions eligible again)."""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import TYPE_CHECKING

import click

from eros.cli import main
from eros.errors import ErosError, PermanentError, TransientError

if TYPE_CHECKING:
    from eros.cli._common import Runtime
    from eros.dreaming.services.classify import Pipeline, Report
    from eros.memory.core.claims import Attempt, Claim


# --- sweep ----------------------------------------------------------------------------------
@main.command()
@click.option("--batch", type=click.IntRange(1, 10000), metavar="N",
              help="Claim at most N sessions (default DREAMING_BATCH).")
@click.option("--wait", "wait_", is_flag=True,
              help="Follow the claimed sessions to the end with a progress bar.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              metavar="SECS", help="With --wait: give up (exit 1) after SECS.")
def sweep(batch: int | None, wait_: bool, timeout: float) -> None:
    """Claim idle sessions now and send one classify task each to the broker.

    Exactly what a beat tick does (the same function), for when you do not want to wait for
    the next tick. A worker (`eros run` or `eros worker`) does the classifying; with --wait
    this command follows the sessions until each is stamped, dead-lettered or released.
    """
    from eros.cli._common import export_services, runtime

    with runtime(need_broker=True) as rt:
        export_services(rt.settings)
        from eros import worker

        if wait_ and not worker.app.control.ping(timeout=1.0):
            click.echo("eros: warning: no worker answered a ping; the tasks wait in the queue "
                       "until `eros run` or `eros worker` starts", err=True)
        claims = worker.claim_and_fan_out(batch)
        click.echo(f"claimed {len(claims)} idle sessions and sent {len(claims)} classify tasks "
                   f"to queue {rt.settings.eros_classify_queue}")
        if wait_ and claims:
            _follow(rt, claims, timeout)


def _follow(rt: Runtime, claims: list[Claim], timeout: float) -> None:
    from eros.memory.db.queries import claims_progress

    deadline = time.monotonic() + timeout
    done: list[dict[str, object]] = []
    with click.progressbar(length=len(claims), label="classifying", file=sys.stderr) as bar:
        while True:
            with rt.engine.connect() as conn:
                rows = claims_progress(conn, claims)
            finished = [r for r in rows if r["done"]]
            bar.update(len(finished) - len(done))
            done = finished
            if len(done) == len(claims) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    outcomes: dict[str, int] = {}
    for row in done:
        kind = str(row["outcome"] or "unknown")
        outcomes[kind] = outcomes.get(kind, 0) + 1
    memories = sum(int(str(r["memory_count"] or 0)) for r in done)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none"
    click.echo(f"finished {len(done)}/{len(claims)}: {summary}; {memories} memories written")
    if len(done) < len(claims):
        raise ErosError(f"timed out after {timeout:.0f}s with {len(claims) - len(done)} "
                        "sessions still in flight (see `eros status`)")


# --- classify -------------------------------------------------------------------------------
@main.command()
@click.argument("session", type=click.UUID)
@click.option("--dry-run", is_flag=True,
              help="Write nothing: no claim, no attempt counted, no memories, no stamp.")
@click.option("--force", is_flag=True,
              help="Also re-run a session that is classified, dead-lettered or claimed "
                   "(re-reads it from the start; duplicates are never written).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead.")
def classify(session: uuid.UUID, dry_run: bool, force: bool, as_json: bool) -> None:
    """Classify one session in this process (no broker or worker needed).

    Prints the transcript sent to the model, its raw reply, the parsed candidates and what was
    written. Uses the configured providers (offline ones when no API keys are set). A provider
    error is one line on stderr and exit code 1; the session is released for a later retry.
    """
    from eros.cli._common import runtime

    with runtime() as rt:
        pipeline = _pipeline(rt)
        attempt = _dry_attempt(rt, session, force) if dry_run else _take(rt, pipeline,
                                                                         session, force)
        from eros.dreaming.services.classify import classify as run_classify

        try:
            report = run_classify(pipeline, attempt, dry_run=dry_run)
        except (TransientError, PermanentError) as err:
            if not dry_run:
                _release(pipeline, attempt, err)
            kind = "transient" if isinstance(err, TransientError) else "permanent"
            raise ErosError(f"session {session}: {kind} {err.provider} error: {err}") from None
    _print_report(report, dry_run, as_json)


def _pipeline(rt: Runtime) -> Pipeline:
    from eros.dreaming.services.classify import Pipeline
    from eros.prompts import load_prompt
    from eros.providers import make_providers

    llm, embedder = make_providers(rt.settings)
    return Pipeline(rt.settings, rt.engine, llm, embedder,
                    load_prompt(rt.settings.dreaming_prompt_file,
                                rt.settings.dreaming_prompt_version))


def _dry_attempt(rt: Runtime, session: uuid.UUID, force: bool) -> Attempt:
    """An attempt built from the row as it is: nothing is claimed or counted."""
    from eros.memory.core.claims import Attempt, Claim
    from eros.memory.db.queries import session_state

    with rt.engine.connect() as conn:
        state = session_state(conn, session)
    if state is None:
        raise ErosError(f"session {session} does not exist")
    if state.classified_at is not None and not force:
        click.echo("note: session already classified; showing only turns after its watermark "
                   "(--force shows a full re-extraction)", err=True)
    claim = Claim(state.id, state.user_id, state.instance_id, uuid.UUID(int=0))
    return Attempt(claim, state.attempts + 1, 0 if force else state.classified_through_seq)


def _take(rt: Runtime, pipeline: Pipeline, session: uuid.UUID, force: bool) -> Attempt:
    from eros.dreaming.services.classify import start_attempt
    from eros.memory.db import repo
    from eros.memory.db.queries import session_state

    with rt.engine.begin() as conn:
        if session_state(conn, session) is None:
            raise ErosError(f"session {session} does not exist")
        claim = repo.claim_one(conn, session, stale_secs=rt.settings.dreaming_claim_stale_secs,
                               force=force)
    if claim is None:
        raise ErosError(f"session {session} is already classified, dead-lettered or claimed by "
                        "a worker; use --force to re-run it")
    attempt = start_attempt(pipeline, claim.session_id, claim.token)
    if attempt is None:
        raise ErosError(f"session {session}: the claim was taken over before the run started")
    return attempt


def _release(pipeline: Pipeline, attempt: Attempt, err: Exception) -> None:
    """Give the claim back so the sweeper retries later (like a worker does)."""
    from eros.memory.core.claims import Outcome
    from eros.memory.db import repo

    permanent = isinstance(err, PermanentError)
    delay = pipeline.settings.dreaming_claim_stale_secs if permanent else 0
    with pipeline.engine.begin() as conn:
        repo.release(conn, attempt, Outcome("permanent_error" if permanent else "retrying",
                                            error=str(err)[:2000]), delay_secs=delay)


def _print_report(report: Report, dry_run: bool, as_json: bool) -> None:
    candidates = [{"category": c.category, "importance": c.importance, "content": c.content}
                  for c in report.candidates]
    written = report.detail.get("would_write", 0) if dry_run else report.memories_written
    if as_json:
        click.echo(json.dumps({
            "session_id": report.session_id, "dry_run": dry_run, "outcome": report.outcome,
            "attempt": report.attempt, "transcript": report.transcript,
            "raw_reply": report.raw_reply, "candidates": candidates,
            "memories_written": 0 if dry_run else report.memories_written,
            "would_write": written if dry_run else None,
            "detail": {k: v for k, v in report.detail.items() if k != "would_write"},
        }, ensure_ascii=False, indent=2, default=str))
        return
    from eros.cli._common import table

    click.secho("== transcript sent ==", bold=True)
    click.echo(report.transcript or "(no turns to extract)")
    click.secho("== raw reply ==", bold=True)
    click.echo(report.raw_reply or "(no model call)")
    click.secho(f"== parsed candidates ({len(candidates)}) ==", bold=True)
    if candidates:
        rows = [[c.category, "" if c.importance is None else f"{c.importance:.2f}", c.content]
                for c in report.candidates]
        click.echo(table(["category", "importance", "content"], rows))
    for key in ("parse_errors", "dropped", "turns_trimmed"):
        if report.detail.get(key):
            click.echo(f"{key.replace('_', ' ')}: {report.detail[key]}")
    click.secho("== result ==", bold=True)
    verb = "would write" if dry_run else "wrote"
    suffix = " (dry run: nothing was written)" if dry_run else ""
    click.echo(f"outcome {report.outcome}; {verb} {written} memories{suffix}")


# --- requeue --------------------------------------------------------------------------------
@main.command()
@click.argument("sessions", nargs=-1, type=click.UUID)
@click.option("--dead-letters", is_flag=True, help="Requeue every dead-lettered session.")
@click.option("--from-start", is_flag=True,
              help="Re-extract the whole session, not only turns after its watermark.")
def requeue(sessions: tuple[uuid.UUID, ...], dead_letters: bool, from_start: bool) -> None:
    """Make sessions eligible again: `eros requeue SESSION...` or `eros requeue --dead-letters`.

    Clears the stamp, the claim, the attempt count, the backoff and the dead letter, so the
    next tick (or `eros sweep`) claims them. Memories already written stay, and are not written
    twice.
    """
    if not sessions and not dead_letters:
        raise click.UsageError("give one or more SESSION ids, or --dead-letters")
    from eros.cli._common import runtime
    from eros.memory.db import repo

    with runtime() as rt, rt.engine.begin() as conn:
        count = repo.requeue(conn, sessions, dead_letters=dead_letters, from_start=from_start)
    click.echo(f"requeued {count} sessions")
    if sessions and count < len(set(sessions)) and not dead_letters:
        raise ErosError(f"{len(set(sessions)) - count} of the given sessions do not exist")
