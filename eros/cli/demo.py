"""The demo's parts that are not process management: waiting for the backlog to drain (by
polling the database, the only place that knows), one consolidation pass per user ("real
dreaming", in-process with the configured providers) and the summary printed at the end."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
    from eros.memory.db.queries import session_counts

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


@dataclass
class Dreamt:
    """What the demo's consolidation pass did, and one recall that shows it."""

    merged: int = 0
    superseded: int = 0
    users: int = 0
    changes: list[tuple[str, str, str]] = field(default_factory=list)  # user, old, new
    recall: tuple[str, str, list[str]] | None = None  # user, query, recalled contents


def consolidate_all(engine: Engine, settings: Settings) -> Dreamt:
    """One consolidation pass for every user (what beat's finder does over hours), then a
    recall about the first superseded fact: the newer one answers it.

    The sample corpus spans two months and is dreamt in seconds, so its memories are first
    dated by their sessions (:mod:`eros.evaluation.db.replay_sql`): recency and "which fact is
    newer"
    then follow the corpus's timeline, not the order the worker happened to finish in."""
    from eros.consolidation.core.consolidation_reply import load_consolidation_prompt
    from eros.consolidation.services.consolidate import Consolidator, consolidate, start_pass
    from eros.evaluation.db.replay_sql import date_memories_by_session
    from eros.memory.db import queries
    from eros.providers import make_providers
    from eros.providers.offline.hashing import HAS_CJK
    from eros.providers.offline.judge import residence
    from eros.recall.services.recall import recall

    llm, embedder = make_providers(settings)
    c = Consolidator(settings, engine, llm, embedder, load_consolidation_prompt())
    with engine.begin() as conn:
        date_memories_by_session(conn)
        users = [row["user_id"] for row in queries.list_users(conn, limit=1000)]
    out = Dreamt(users=len(users))
    for user in users:
        start_pass(c, user)
        report = consolidate(c, user)
        out.merged += report.merged
        out.superseded += report.superseded
        for change in report.changes:
            out.changes += [(str(user), ch["content"], change["result"])
                            for ch in change["changes"] if ch["status"] == "superseded"]
    if out.changes:
        user, old, _ = out.changes[0]
        query = old
        if residence(old) is not None:
            query = "你现在住在哪里？" if HAS_CJK.search(old) else "Where do you live these days?"
        result = recall(engine, embedder, user, query, settings=settings, strategy="decay", k=3)
        out.recall = (user, query, [m.content for m in result.memories])
    return out


def _dreamt_lines(d: Dreamt, cols: int) -> list[str]:
    from eros.cli._common import clip

    out = [f"\nConsolidated {d.users} users: {d.merged} memories merged into duplicates, "
           f"{d.superseded} superseded by newer facts (nothing is deleted: the memories "
           "listing's --history shows them)."]
    out += [clip(f"  {old}  →  {new}", cols) for _, old, new in d.changes[:6]]
    if d.recall:
        user, query, recalled = d.recall
        out.append(f'recall for user {user[:8]}… asked "{query}" (decay, top 3):')
        out += [clip(f"  {i}. {text}", cols) for i, text in enumerate(recalled, 1)]
    return out


def print_summary(engine: Engine, settings: Settings, services: Services, *,
                  elapsed: float, dreamt: Dreamt | None = None) -> None:
    """What was extracted, per user and category, and how to look further."""
    from eros.cli._common import clip, describe_providers, providers_info, terminal_columns
    from eros.memory.db import queries

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
    if dreamt is not None:
        out += _dreamt_lines(dreamt, cols)
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
