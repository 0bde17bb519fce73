"""``eros turns backfill``: index the user turns of sessions classified
before classification indexed turns itself. Thin: :mod:`eros.dreaming.services.turn_backfill`
does the work. Counts only, never text."""

from __future__ import annotations

import json

import click

from eros.cli import main

#: eros.dreaming.services.turn_backfill.BATCH (not imported here: the CLI starts without the
#: services)
BATCH = 200


@main.group()
def turns() -> None:
    """The user's turns as a recall layer (engine.memory_turns; docs/recall.md, "Fused")."""


@turns.command(name="backfill")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Stop after scanning this many turns (run again to resume).")
@click.option("--batch", type=click.IntRange(1, 1000), default=BATCH, show_default=True,
              help="Turns per batch: one embedding request and one transaction each (the "
                   "cursor is committed with the batch's rows).")
@click.option("--dry-run", is_flag=True,
              help="Embed and judge, write nothing (not even the cursor): what would be "
                   "indexed, and what it costs.")
@click.option("--restart", is_flag=True,
              help="Start over from the first turn with a new cutoff (after a dimension "
                   "switch dropped the turn vectors, say).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def turns_backfill(limit: int | None, batch: int, dry_run: bool, restart: bool,
                   as_json: bool) -> None:
    """Index the user turns of sessions classified before classification indexed them.

    Only turns a session's classification already read (at or below its watermark), of the
    channels extraction reads (DREAMING_CHANNELS), never one a forget took out, never one
    already indexed. Each is screened by the memory guard and labelled exactly as
    classification does (a turn the rules reject or with a withheld label is left out), and
    embedded in batches through the global EMBEDDING_* limits (a throttled batch waits).
    Resumable: the cursor (engine.turn_backfill) is committed with each batch; a stopped run
    goes on where it was, and a finished one does nothing until --restart. Turns newer than
    the first run's start are classification's to index.
    """
    from eros.cli._common import runtime
    from eros.dreaming.services.turn_backfill import backfill
    from eros.providers import make_providers
    from eros.providers.ratelimit import make_limiter

    with runtime() as rt:
        llm, embedder = make_providers(rt.settings)
        report = backfill(rt.settings, rt.engine, embedder, llm=llm,
                          limiter=make_limiter(rt.settings), limit=limit, batch=batch,
                          dry_run=dry_run, restart=restart).to_dict()
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    verb = "would index" if dry_run else "indexed"
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(report["statuses"].items())) or "none"
    dropped = sum(report["dropped"].values())
    click.echo(f"turns backfill: scanned {report['scanned']}, {verb} ({statuses}), "
               f"left out {dropped} by the guard and {report['withheld']} withheld; "
               f"{report['embedding_requests']} embedding requests, "
               f"{report['embedding_tokens']} tokens, ${report['cost_usd']:.6f}; "
               + ("done" if report["done"] else "more to do (run again to resume)"))
    progress = report["progress"]
    if progress is not None:
        click.echo(f"cursor: seq {progress['after_seq']} of {progress['cutoff_seq']}, "
                   f"{progress['total_indexed']} indexed in total")
