"""The ``eros`` command line: one entry point for everything a developer or operator does.

Errors are one clear line on stderr (a traceback only with ``--debug``); exit code 2 means a
usage error, 1 a failure.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from eros.errors import ErosError


class ErosGroup(click.Group):
    """Turns eros errors (and unexpected ones) into one line and exit code 1, unless
    ``--debug``; click's own usage errors keep exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except ErosError as err:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"eros: error: {err}", err=True)
            ctx.exit(1)
        except Exception as err:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            first = (str(err).strip().splitlines() or [""])[0]
            click.echo(f"eros: error: {type(err).__name__}: {first} "
                       "(run `eros --debug ...` for the traceback)", err=True)
            ctx.exit(1)


@click.group(cls=ErosGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True,
              help="Show tracebacks and DEBUG logs (opt-in: a traceback may show personal text).")
@click.version_option(package_name="eros")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """eros — the dreaming worker system: idle chat sessions become long-term memories."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import os

    from eros.ops.logs import add_privacy_filter, pin_third_party

    add_privacy_filter(logging.getLogger().handlers)
    # --debug is for our own records: the SDKs' DEBUG records hold request bodies
    pin_third_party(os.environ.get("EROS_LOG_THIRD_PARTY"))


# Each command module registers its commands on ``main`` when imported.
from eros.cli import commands as _commands  # noqa: E402,F401
from eros.cli import consent_cmds as _consent_cmds  # noqa: E402,F401
from eros.cli import consolidate_cmd as _consolidate_cmd  # noqa: E402,F401
from eros.cli import data_cmds as _data_cmds  # noqa: E402,F401
from eros.cli import eval_cmd as _eval_cmd  # noqa: E402,F401
from eros.cli import guard_cmds as _guard_cmds  # noqa: E402,F401
from eros.cli import health_cmd as _health_cmd  # noqa: E402,F401
from eros.cli import inspect_cmds as _inspect_cmds  # noqa: E402,F401
from eros.cli import ledger_cmd as _ledger_cmd  # noqa: E402,F401
from eros.cli import ops_cmds as _ops_cmds  # noqa: E402,F401
from eros.cli import privacy_cmds as _privacy_cmds  # noqa: E402,F401
from eros.cli import recall_cmd as _recall_cmd  # noqa: E402,F401
from eros.cli import reembed_cmd as _reembed_cmd  # noqa: E402,F401
from eros.cli import run_cmd as _run_cmd  # noqa: E402,F401
from eros.cli import turns_cmd as _turns_cmd  # noqa: E402,F401
