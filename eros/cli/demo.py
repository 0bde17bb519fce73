"""The demo's two halves that are not process management: waiting for the backlog to drain
(by polling the database, the only place that knows) and the summary printed at the end."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from eros.devstack.embedded import Services
    from eros.settings import Settings


def drain(engine: Engine, settings: Settings, check: Callable[[], None], *,
          timeout: float, poll: float = 1.0) -> bool:
    """Wait until no session is eligible (in-flight ones count as not done); False on timeout.

    Sessions backing off after an error are not waited for: they are in the summary instead.
    ``check`` raises if a child process died.
    """
    from eros.db.queries import session_counts

    def remaining() -> int:
        with engine.connect() as conn:
            counts = session_counts(conn, idle_secs=settings.dreaming_idle_secs,
                                    stale_secs=settings.dreaming_claim_stale_secs)
        return int(counts["eligible"])

    total = remaining()
    if total == 0:
        click.echo("demo: nothing to dream about: every idle session is already classified "
                   "(`eros requeue` makes sessions eligible again)", err=True)
        return True
    click.echo(f"demo: {total} sessions to dream about; worker and beat starting "
               f"(claim every {settings.dreaming_tick_secs}s)", err=True)
    deadline = time.monotonic() + timeout
    done = 0
    with click.progressbar(length=total, label="dreaming", file=sys.stderr) as bar:
        while True:
            check()
            left = remaining()
            now_done = max(0, total - left)
            if now_done > done:
                bar.update(now_done - done)
                done = now_done
            if left == 0:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(poll)


def print_summary(engine: Engine, settings: Settings, services: Services, *,
                  elapsed: float) -> None:
    """What was extracted, per user and category, and how to look further."""
    from eros.cli._common import clip, describe_providers, providers_info, terminal_columns
    from eros.db import queries

    with engine.connect() as conn:
        rows = queries.summary_by_user(conn)
        counts = queries.session_counts(conn, idle_secs=settings.dreaming_idle_secs,
                                        stale_secs=settings.dreaming_claim_stale_secs)
        outcomes = queries.outcome_counts(conn)["sessions"]
        memories = queries.memory_counts(conn)
    cols = terminal_columns()
    out = [f"\nDreamt in {elapsed:.1f}s: {counts['classified']} of {counts['sessions']} sessions "
           f"classified, {memories['current']} memories for {memories['users']} users.",
           f"outcomes: {', '.join(f'{k} {v}' for k, v in outcomes.items()) or 'none'}"
           + (f"; {counts['waiting_retry']} backing off after errors"
              if counts["waiting_retry"] else "")
           + (f"; {counts['dead_letters']} dead-lettered" if counts["dead_letters"] else ""),
           describe_providers(providers_info(settings))]
    user = None
    for row in rows:
        if row["user_id"] != user:
            user = row["user_id"]
            out.append(f"\nuser {user}")
        samples = " · ".join(" ".join(s.split()) for s in row["samples"] or [])
        out.append(clip(f"  {row['category']:<11}{row['n']:>3}  {samples}", cols))
    first = rows[0]["user_id"] if rows else "USER"
    out += ["\nExplore:", f"  eros memories {first}", "  eros users", "  eros status",
            *services_hint(services)]
    click.echo("\n".join(out))


def services_hint(services: Services) -> list[str]:
    """How to reach the database afterwards (the demo's last lines)."""
    if services.db_embedded and services.psql_url:
        return ["  eros psql                   # psql on the embedded database (starts it if "
                "needed)",
                f"  {services.psql} '{services.psql_url}'   # while `eros run` is running"]
    from eros.cli._common import mask

    return [f"  psql '{mask(services.database_url or '')}'"]
