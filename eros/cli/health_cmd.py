"""``eros health``: a liveness/readiness probe for workers and beat."""

from __future__ import annotations

import json
import sys

import click

from eros.cli import main
from eros.ops import health
from eros.settings import load_settings


@main.command(name="health")
@click.option("--worker", "worker_name", default=None, metavar="NAME",
              help="Ping a worker (e.g. celery@host); 'any' for any worker.")
@click.option("--beat", "check_beat", is_flag=True, help="Check beat's heartbeat.")
@click.option("--max-beat-age", type=float, default=None,
              help="Seconds since beat's last loop before it counts as dead.")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def health_cmd(worker_name: str | None, check_beat: bool, max_beat_age: float | None,
               as_json: bool) -> None:
    """Check the database and broker (readiness), and optionally a worker or beat (liveness).

    Exit code 0 when every check passes, 1 otherwise — usable as a container probe:

    \b
      eros health                          # readiness: database migrated, broker up
      eros health --worker celery@$HOSTNAME  # worker liveness
      eros health --worker classify@$HOSTNAME  # the classify worker's
      eros health --beat                   # beat liveness
    """
    settings = load_settings()
    checks = [health.database(settings), health.broker(settings)]
    if worker_name:
        from eros.worker import app

        checks.append(health.worker(app, name=None if worker_name == "any" else worker_name))
    if check_beat:
        checks.append(health.beat(settings, max_age=max_beat_age))
    ok = all(c.ok for c in checks)
    if as_json:
        click.echo(json.dumps({"ok": ok, "checks": [
            {"name": c.name, "ok": c.ok, "detail": c.detail, **c.data} for c in checks]}))
    else:
        for c in checks:
            click.echo(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
    sys.exit(0 if ok else 1)
