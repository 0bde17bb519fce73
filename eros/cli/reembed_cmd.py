"""``eros reembed [--model M] [--dim D]`` — move every memory onto one embedding model."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from eros.cli import main
from eros.errors import ErosError, PermanentError, TransientError

if TYPE_CHECKING:
    from sqlalchemy import Engine

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
@click.option("--switch", is_flag=True,
              help="After a --dim re-embed: make the columns built beside the live ones live "
                   "(dreaming paused; docs/operations.md).")
@click.option("--drop-old", is_flag=True,
              help="After --switch: drop the previous size's columns.")
@click.option("--dry-run", is_flag=True, help="Count the rows to re-embed; embed nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def reembed(model: str | None, dim: int | None, stamp_legacy: bool, switch: bool,
            drop_old: bool, dry_run: bool, as_json: bool) -> None:
    """Re-embed every memory whose embedding model is not M.

    Batches of REEMBED_BATCH texts (the provider's maximum inputs per request) under the
    global EMBEDDING_* rate limits, with a progress bar and an ETA on stderr. Each batch is
    committed on its own and rows are switched one UPDATE at a time, so recall keeps
    answering (each model's rows are ranked apart) and an interrupted run — Ctrl-C, a crash,
    SIGKILL — resumes where it stopped when run again. Also a task: `celery -A eros.worker
    call eros.reembed_memories --kwargs '{"model": "voyage-4-lite"}'`.

    A --dim other than the vector column's fills new columns built beside the live ones
    (embedding_next, and its HNSW index once full) while recall keeps using the live ones;
    then --switch and later --drop-old (docs/operations.md, "Changing the embedding
    dimension").
    """
    from sqlalchemy import text

    from eros.cli._common import runtime
    from eros.db import dimension_sql
    from eros.providers import make_embedder
    from eros.providers.ratelimit import make_limiter
    from eros.recall.db import reembed_sql
    from eros.recall.services.recall_models import configured_model
    from eros.recall.services.reembed import Reembedder

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
        if switch or drop_old:
            click.echo(_switch(rt.engine, make_embedder(settings, model=model).name,
                               drop_old))
            return
        with rt.engine.connect() as conn:
            column = dimension_sql.column_dimension(conn, "embedding")
            beside = dimension_sql.column_dimension(conn, "embedding_next")
        size = dim or settings.embedding_dim
        target = reembed_sql.LIVE
        if column is not None and size != column:
            if beside is not None and beside != size:
                raise ErosError(f"--dim {size}: embedding_next already holds {beside} "
                                "dimensions; " + DIM_PROCEDURE)
            if beside is None and not dry_run:
                with rt.engine.begin() as conn:
                    dimension_sql.prepare(conn, size)
            target = reembed_sql.BESIDE
        worker = Reembedder(settings, rt.engine, make_embedder(settings, model=model, dim=size),
                            make_limiter(settings), target)
        if dry_run and target == reembed_sql.BESIDE and beside is None:
            with rt.engine.connect() as conn:
                total = int(conn.execute(text(
                    "SELECT count(*) FROM engine.companion_memories")).scalar_one())
            click.echo(json.dumps({"model": worker.model, "pending": total}) if as_json
                       else f"{total} memories to re-embed with {worker.model} at {size}")
            return
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
        if target == reembed_sql.BESIDE and report.finished:
            dimension_sql.build_index(rt.engine)
            click.echo(f"embedding_next is full and indexed at {size} dimensions: pause "
                       "dreaming, run this again to catch up, then `eros reembed --switch`",
                       err=True)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
        return
    rate = report.done / report.elapsed_secs if report.elapsed_secs else 0.0
    click.echo(f"{report.done} memories re-embedded with {report.model} in {report.batches} "
               f"batches, {report.elapsed_secs:.1f}s ({rate:.0f}/s), {report.tokens} tokens"
               + (f", {report.throttled_secs:.1f}s waiting for rate limits"
                  if report.throttled_secs else ""))


def _switch(engine: Engine, model: str, drop_old: bool) -> str:
    """``--switch``: the beside columns become live; ``--drop-old``: the old ones go."""
    from eros.db import dimension_sql

    with engine.begin() as conn:
        if drop_old:
            dimension_sql.drop_old(conn)
            return "dropped embedding_old and embedding_model_old"
        size = dimension_sql.column_dimension(conn, "embedding_next")
        if size is None:
            raise ErosError("nothing to switch to: no embedding_next column; " + DIM_PROCEDURE)
        left = dimension_sql.missing(conn, model)
        if left:
            raise ErosError(f"{left} memories have no {model} vector in embedding_next yet: "
                            f"run `eros reembed --model {model} --dim {size}` first")
        dimension_sql.switch(conn, size)
    return (f"switched: embedding is vector({size}) from {model}; set EMBEDDING_DIM={size} and "
            f"EMBEDDING_MODEL={model} everywhere, then `eros reembed --drop-old`")

