"""Getting sessions in: ``seed`` (the bundled corpus) and ``ingest FILE.jsonl``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from eros.cli import main

if TYPE_CHECKING:
    from eros.dreaming.core.session_file import BadLine
    from eros.dreaming.services.ingest import IngestReport

_SHIFT_HELP = ("Move all timestamps so the newest session ended one hour ago (keeps the gaps "
               "between them), so the sessions look recent but are already idle.")


def _summary(report: IngestReport, what: str) -> str:
    parts = [f"{what}: {report.valid} valid sessions, {len(report.bad)} bad lines",
             f"inserted {report.inserted} new sessions ({report.messages} messages)",
             f"{report.skipped} already present (left unchanged)"]
    text = "; ".join(parts)
    if report.shifted_by is not None:
        text += f"; timestamps shifted by {report.shifted_by}"
    return text


@main.command()
@click.option("--shift-to-now", is_flag=True, help=_SHIFT_HELP)
def seed(shift_to_now: bool) -> None:
    """Load the bundled sample corpus (40 sessions, 6 users, 3 personas, English and Chinese).

    Idempotent: sessions already present are skipped, never duplicated. The corpus dates are
    in the past, so every session is idle at once; see eros/data/README.md for what it holds.
    """
    from eros.cli._common import runtime
    from eros.dreaming.services.ingest import corpus_lines, ingest

    with runtime() as rt:
        report = ingest(rt.engine, corpus_lines, shift="always" if shift_to_now else "never")
    click.echo(_summary(report, "sample corpus"))


@main.command(name="ingest")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.option("--shift-to-now", is_flag=True, help=_SHIFT_HELP)
def ingest_cmd(path: str, shift_to_now: bool) -> None:
    """Load sessions from a JSONL file (one session per line; format in eros/data/README.md).

    Every line is validated; a bad line is reported as `line N: field: reason` on stderr and
    skipped, and the good lines are still loaded. Sessions already present are skipped.

    Exit codes: 0 all lines loaded, 1 some lines were bad (the rest were loaded), 2 the file
    is missing or unreadable.
    """
    from eros.cli._common import runtime
    from eros.dreaming.services.ingest import file_lines, ingest

    def bad(line: BadLine) -> None:
        click.echo(f"{path}: {line}", err=True)

    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise click.BadParameter(f"cannot read {path}: {err.strerror}",
                                 param_hint="'PATH'") from None
    with runtime() as rt:
        report = ingest(rt.engine, file_lines(path), shift="always" if shift_to_now else "never",
                        on_bad=bad)
    click.echo(_summary(report, path))
    if report.bad:
        sys.exit(1)
