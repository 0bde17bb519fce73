"""``eros run``: the main job in one process tree, and ``eros run --demo``.

The tree is: this process (supervisor) → embedded PostgreSQL and Redis when their URLs are
unset → ``celery worker`` and ``celery beat`` as children with the URLs exported to them.
Shutdown runs in the reverse order — beat, then the worker (a warm shutdown lets running tasks
finish), then the servers — so no task ever loses its database mid-write. The children sit in
their own process groups so a Ctrl-C reaches only the supervisor, which then stops them in
order; a second Ctrl-C kills them at once.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from eros.cli import main
from eros.devstack.supervisor import Signals, Stopped, Supervisor, run_lock
from eros.errors import ErosError

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from eros.settings import Settings

log = logging.getLogger("eros.run")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
#: the demo's fast ticks; the idle threshold only has to be below the corpus's age.
DEMO_TICK_SECS = 2
DEMO_IDLE_SECS = 60


def _celery(quiet: bool, *args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "eros.worker", *(["-q"] if quiet else []),
            *args]


def _child_env(settings: Settings, overrides: dict[str, str]) -> dict[str, str]:
    """This environment (keys included: the children use the configured providers) plus the
    resolved service URLs and the command-line overrides; text logs on a terminal unless
    EROS_LOG_FORMAT says otherwise."""
    env = dict(os.environ)
    if "EROS_LOG_FORMAT" not in env and sys.stderr.isatty():
        env["EROS_LOG_FORMAT"] = "text"  # JSON lines are for log shippers, not a terminal
    env.update(overrides)
    env["DATABASE_URL"] = settings.require_database_url()
    env["REDIS_URL"] = settings.require_redis_url()
    env["PYTHONUNBUFFERED"] = "1"
    return env


@main.command()
@click.option("-c", "--concurrency", type=click.IntRange(min=1),
              help="Worker processes (default: one per CPU; 1 with --demo, so the sample "
                   "sessions are dreamt in time order).")
@click.option("-l", "--loglevel", type=click.Choice(LEVELS, case_sensitive=False),
              help="Log level (default EROS_LOG_LEVEL; WARNING for the children in --demo).")
@click.option("--tick", type=click.IntRange(min=1), metavar="SECS",
              help="Claim every SECS (sets DREAMING_TICK_SECS for the children).")
@click.option("--idle", type=click.IntRange(min=0), metavar="SECS",
              help="A session is idle after SECS (sets DREAMING_IDLE_SECS).")
@click.option("--demo", is_flag=True,
              help="Seed the sample corpus if there are no sessions, drain it with fast "
                   f"ticks ({DEMO_TICK_SECS}s, idle {DEMO_IDLE_SECS}s), print what was "
                   "extracted and exit.")
@click.option("--demo-timeout", type=click.FloatRange(min=1), default=180.0, show_default=True,
              metavar="SECS", help="With --demo: give up (exit 1) after SECS.")
def run(concurrency: int | None, loglevel: str | None, tick: int | None, idle: int | None,
        demo: bool, demo_timeout: float) -> None:
    """Run the whole job: a Celery worker and beat in one process tree.

    With DATABASE_URL unset an embedded PostgreSQL (with pgvector) is started in the data
    directory (EROS_DATA_DIR, default the user data dir), and with REDIS_URL unset an embedded
    Redis; both are reused on the next run and stopped on exit. The database is migrated.
    Ctrl-C (or SIGTERM) stops beat, lets running tasks finish, then stops the servers.
    """
    from eros.devstack.embedded import data_dir
    from eros.settings import load_settings

    overrides: dict[str, str] = {}
    if demo:
        overrides = {"DREAMING_TICK_SECS": str(DEMO_TICK_SECS),
                     "DREAMING_IDLE_SECS": str(DEMO_IDLE_SECS)}
    if tick is not None:
        overrides["DREAMING_TICK_SECS"] = str(tick)
    if idle is not None:
        overrides["DREAMING_IDLE_SECS"] = str(idle)
    fields = {k.lower(): v for k, v in overrides.items()}
    settings = load_settings(**fields)
    level = (loglevel or settings.eros_log_level).upper()
    logging.getLogger("eros").setLevel(level)
    child_level = loglevel.upper() if loglevel else ("WARNING" if demo else level)
    root = data_dir()
    signals = Signals()
    with run_lock(root):
        signals.install()
        try:
            code = _run(settings, fields, overrides, root, signals, concurrency=concurrency,
                        child_level=child_level, demo=demo, demo_timeout=demo_timeout)
        finally:
            signals.restore()
    sys.exit(code)


def _run(settings: Settings, fields: dict[str, str], overrides: dict[str, str], root: Path,
         signals: Signals, *, concurrency: int | None, child_level: str, demo: bool,
         demo_timeout: float) -> int:
    from eros.cli._common import check_brokers, check_db, describe_providers, providers_info
    from eros.db.engine import make_engine
    from eros.db.migrate import upgrade
    from eros.devstack.embedded import EmbeddedStack
    from eros.devstack.workers import worker_commands
    from eros.settings import load_settings

    stack = EmbeddedStack(settings.database_url, settings.redis_url, need_db=True,
                          need_broker=True, root=root)
    supervisor: Supervisor | None = None
    engine: Engine | None = None
    try:
        started = time.monotonic()
        services = stack.start()
        settings = load_settings(database_url=services.database_url,
                                 redis_url=services.redis_url, **fields)
        if not services.db_embedded:
            upgrade(settings.migration_url(), settings=settings)  # the embedded one: already
        engine = make_engine(settings.require_database_url(), pool_size=2, settings=settings)
        check_db(engine, settings, embedded=services.db_embedded)
        check_brokers(settings, embedded=services.redis_embedded)
        log.info("providers: %s", describe_providers(providers_info(settings)))
        if demo:
            _demo_seed(engine)
        log_dir = None
        if demo:
            log_dir = root / "logs"
            log_dir.mkdir(exist_ok=True)
        supervisor = signals.supervisor = Supervisor(_child_env(settings, overrides), log_dir)
        for name, worker_args in worker_commands(settings, concurrency=concurrency,
                                                 loglevel=child_level, demo=demo):
            supervisor.spawn(name, _celery(demo, *worker_args))
        supervisor.spawn("beat", _celery(demo, "beat", f"--loglevel={child_level}",
                                         f"--schedule={root / 'celerybeat-schedule'}"))
        if not demo:
            log.info("running: claim every %ss, idle after %ss; Ctrl-C to stop",
                     settings.dreaming_tick_secs, settings.dreaming_idle_secs)
            while True:
                supervisor.check()
                time.sleep(0.5)
        from eros.cli.demo import consolidate_all, drain, print_summary

        drained = drain(engine, settings, supervisor.check, timeout=demo_timeout)
        signals.stopping = True  # a signal from here on escalates instead of interrupting
        supervisor.stop()
        dreamt = consolidate_all(engine, settings) if drained else None
        print_summary(engine, settings, services, elapsed=time.monotonic() - started,
                      dreamt=dreamt)
        if not drained:
            raise ErosError(f"the backlog did not drain within {demo_timeout:.0f}s "
                            "(see `eros status`)")
        return 0
    except Stopped:
        return 0
    finally:
        signals.stopping = True
        if supervisor is not None:
            supervisor.stop()
        if engine is not None:
            engine.dispose()
        stack.stop()


def _demo_seed(engine: Engine) -> None:
    from eros.dreaming.services.ingest import corpus_lines, ingest
    from eros.memory.db.queries import count_sessions

    with engine.connect() as conn:
        existing = count_sessions(conn)
    if existing:
        click.echo(f"demo: the database already has {existing} sessions; not seeding", err=True)
        return
    report = ingest(engine, corpus_lines, shift="if-recent")
    click.echo(f"demo: seeded the sample corpus: {report.inserted} sessions, "
               f"{report.messages} messages", err=True)
