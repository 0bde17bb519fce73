"""``eros reembed [--model M] [--dim D]`` — move every memory onto one embedding model."""

from __future__ import annotations

import json
import sys

import click

from eros.cli import main
from eros.errors import ErosError, PermanentError, TransientError

DIM_PROCEDURE = ("a change of vector size needs a new column and indexes built beside the old "
                 "ones before the switch: follow 'Changing the embedding dimension' in "
                 "docs/operations.md")


@main.command()
@click.option("--model", metavar="M", help="Target embedding model (default EMBEDDING_MODEL).")
@click.option("--dim", type=click.IntRange(1, 16000), metavar="D",
              help="Vector size (default EMBEDDING_DIM). It must be the size of the vector "
                   "column; another size is a schema change (docs/operations.md).")
@click.option("--stamp-legacy", is_flag=True,
              help="Only record EMBEDDING_MODEL on rows from before eros recorded models "
                   "(no embedding calls): run it once before changing EMBEDDING_MODEL.")
@click.option("--dry-run", is_flag=True, help="Count the rows to re-embed; embed nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def reembed(model: str | None, dim: int | None, stamp_legacy: bool, dry_run: bool,
            as_json: bool) -> None:
    """Re-embed every memory whose embedding model is not M.

    Batches of REEMBED_BATCH texts (the provider's maximum inputs per request) under the
    global EMBEDDING_* rate limits, with a progress bar and an ETA on stderr. Each batch is
    committed on its own and rows are switched one UPDATE at a time, so recall keeps
    answering (each model's rows are ranked apart) and an interrupted run — Ctrl-C, a crash,
    SIGKILL — resumes where it stopped when run again. Also a task: `celery -A eros.worker
    call eros.reembed_memories --kwargs '{"model": "voyage-4-lite"}'`.
    """
    from eros.cli._common import runtime
    from eros.db import reembed_sql, repo
    from eros.providers import make_embedder
    from eros.providers.ratelimit import make_limiter
    from eros.services.recall_models import configured_model
    from eros.services.reembed import Reembedder

    with runtime() as rt:
        settings = rt.settings
        if stamp_legacy:
            stamped = 0
            while True:
                with rt.engine.begin() as conn:
                    n = reembed_sql.stamp_legacy(conn, configured_model(settings),
                                                 limit=settings.reembed_batch)
                stamped += n
                if n == 0:
                    break
            click.echo(json.dumps({"stamped": stamped}) if as_json else
                       f"{stamped} rows recorded as {configured_model(settings)}")
            return
        with rt.engine.connect() as conn:
            column = repo.embedding_dimension(conn)
        size = dim or settings.embedding_dim
        if column is not None and size != column:
            raise ErosError(f"--dim {size}: the vector column holds {column} dimensions; "
                            + DIM_PROCEDURE)
        worker = Reembedder(settings, rt.engine, make_embedder(settings, model=model, dim=size),
                            make_limiter(settings))
        total = worker.pending()
        if dry_run:
            click.echo(json.dumps({"model": worker.model, "pending": total}) if as_json
                       else f"{total} memories to re-embed with {worker.model}")
            return
        try:
            with click.progressbar(length=total, label=f"re-embedding with {worker.model}",
                                   show_eta=True, show_pos=True, file=sys.stderr) as bar:
                report = worker.run(on_batch=bar.update)
        except (TransientError, PermanentError) as err:
            raise ErosError(f"re-embed stopped by a {err.provider} error ({err}); run it "
                            "again to resume") from None
    if as_json:
        click.echo(json.dumps(report.to_dict()))
        return
    rate = report.done / report.elapsed_secs if report.elapsed_secs else 0.0
    click.echo(f"{report.done} memories re-embedded with {report.model} in {report.batches} "
               f"batches, {report.elapsed_secs:.1f}s ({rate:.0f}/s), {report.tokens} tokens"
               + (f", {report.throttled_secs:.1f}s waiting for rate limits"
                  if report.throttled_secs else ""))

