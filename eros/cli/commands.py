"""Schema and production-style processes: ``migrate``, ``worker``, ``beat``, ``psql``.

``worker`` and ``beat`` replace themselves with Celery's own commands (``exec``), so signals,
exit codes and every Celery option behave exactly as documented by Celery; they only add the
checks Celery lacks: a clear error for an unset or unreachable URL, and an unmigrated database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import click

from eros.cli import main
from eros.errors import ErosError
from eros.settings import Settings, load_settings

#: a URL only used to pick the SQL dialect for ``migrate --sql`` when none is configured.
_DIALECT_ONLY_URL = "postgresql+psycopg://localhost/eros"
_PASSTHROUGH = {"ignore_unknown_options": True, "allow_extra_args": True,
                "help_option_names": ["-h", "--help"]}


@main.command()
@click.option("--sql", is_flag=True, help="Print the SQL instead of running it.")
@click.option("--no-guard-train", is_flag=True,
              help="Do not train the memory guard's meaning model for a live embedder (the "
                   "first worker, or `eros guard train`, does it then).")
def migrate(sql: bool, no_guard_train: bool) -> None:
    """Upgrade the database schema to the latest version (alembic upgrade head).

    Then builds the memories' HNSW index (CONCURRENTLY) when RECALL_QUANTIZED_SCAN=false or
    CONSOLIDATION_HNSW_ABOVE > 0 reads it, and drops it when nothing does: run it with the
    same settings as the workers.

    Runs against DATABASE_MIGRATE_URL when set (a direct connection past PgBouncer), else
    DATABASE_URL. With neither set this migrates the embedded database (which `eros run` also
    does by itself). Then, for a live embedder (VOYAGE_API_KEY), trains the memory guard's
    meaning model once (`eros guard train`: about 500 short texts embedded, within the
    EMBEDDING_* limits); the offline e5 embedder's model ships in the package.
    """
    from eros.db.migrate import upgrade

    settings = load_settings()
    if sql:
        upgrade(settings.database_migrate_url or settings.database_url or _DIALECT_ONLY_URL,
                sql=True, settings=settings)
        return
    if settings.database_url or settings.database_migrate_url:
        url = settings.database_migrate_url or settings.require_database_url()
        upgrade(url, settings=settings, echo=lambda line: click.echo(line, err=True))
        click.echo("database schema is up to date", err=True)
        if not no_guard_train:
            _train_guard(settings, url)
        return
    from eros.cli._common import runtime

    with runtime():  # starting the embedded server migrates it
        click.echo("embedded database schema is up to date", err=True)


def _train_guard(settings: Settings, url: str) -> None:
    """The guard's meaning model after a migration; a provider failure is a warning (the
    schema is migrated; the first worker tries again)."""
    from eros.db.engine import make_engine
    from eros.errors import ErosError
    from eros.guard.services.guard_layer import embedder_name
    from eros.guard.services.guard_training import train_for_settings
    from eros.providers.offline.hashing import HASH_MODEL

    if settings.embedder_is_offline and embedder_name(settings) != HASH_MODEL:
        return  # e5: the model ships in the package
    engine = make_engine(url, pool_size=1, settings=settings)
    try:
        report = train_for_settings(settings, engine)
    except ErosError as err:
        click.echo(f"warning: memory guard meaning model not trained ({err}); the first "
                   "worker or `eros guard train` tries again", err=True)
        return
    finally:
        engine.dispose()
    if report.outcome == "trained":
        click.echo(f"memory guard meaning model trained for {report.embedding_model}: "
                   f"{report.embedding_tokens} embedding tokens, ${report.cost_usd:.6f}",
                   err=True)


def _checked(settings: Settings, *, need_db: bool = True) -> None:
    """What a production process needs before Celery starts: both URLs, reachable, migrated."""
    from eros.cli._common import check_brokers, check_db
    from eros.db.engine import make_engine

    db_url = settings.require_database_url() if need_db else None
    settings.require_redis_url()
    if db_url:
        engine = make_engine(db_url, pool_size=1)
        try:
            check_db(engine, settings)
        finally:
            engine.dispose()
    check_brokers(settings)


def _exec_celery(args: list[str]) -> None:
    argv = [sys.executable, "-m", "celery", "-A", "eros.worker", *args]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)


@main.command(context_settings=_PASSTHROUGH)
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def worker(celery_args: tuple[str, ...]) -> None:
    """Run a Celery worker: `celery -A eros.worker worker CELERY_ARGS...`.

    Needs DATABASE_URL and REDIS_URL, and BROKER_URL for RabbitMQ (nothing is embedded: this
    is the production shape, one process per replica). Any Celery worker option passes through, e.g.
    `eros worker --concurrency 8 -Q eros.classify`; `eros worker -- --help` shows Celery's.
    """
    settings = load_settings()
    _checked(settings)
    _exec_celery(["worker", *celery_args])


@main.command(context_settings=_PASSTHROUGH)
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def beat(celery_args: tuple[str, ...]) -> None:
    """Run Celery beat: `celery -A eros.worker beat CELERY_ARGS...`.

    Needs REDIS_URL (and BROKER_URL for RabbitMQ). With DATABASE_REPLICA_URL set (and
    RECALL_REPLICA_HEARTBEAT_SECS > 0) beat also writes the replica heartbeat to the primary,
    so it needs DATABASE_URL too, and the same RECALL_REPLICA_HEARTBEAT_SECS as the processes
    that recall: without it every recall reads the primary (reason="lag"). Run exactly one
    beat per deployment (two double every tick; that is harmless here because the claim uses
    SKIP LOCKED, but wasteful). The schedule state file defaults to the eros data directory
    instead of the current directory; pass `--schedule PATH` to choose.
    """
    from eros.devstack.embedded import data_dir

    settings = load_settings()
    _checked(settings, need_db=settings.replica_heartbeat_on)
    args = list(celery_args)
    if not any(a in ("-s", "--schedule") or a.startswith("--schedule=") for a in args):
        args += ["--schedule", str(data_dir() / "celerybeat-schedule")]
    _exec_celery(["beat", *args])


@main.command(context_settings=_PASSTHROUGH)
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def psql(psql_args: tuple[str, ...]) -> None:
    """Open psql on the eros database (the embedded one when DATABASE_URL is unset).

    Uses the psql shipped with the embedded server, else the one on PATH. Extra arguments go
    to psql, e.g. `eros psql -c "select count(*) from engine.companion_memories"`.
    """
    import shutil

    from sqlalchemy.engine import make_url

    from eros.cli._common import runtime

    with runtime(check=False) as rt:
        binary = str(rt.services.psql) if rt.services.psql else shutil.which("psql")
        if not binary:
            raise ErosError("psql is not installed; connect with any client to "
                            f"{rt.settings.database_url}")
        env = dict(os.environ)
        if rt.services.psql_url:
            target = rt.services.psql_url
        else:
            url = make_url(rt.settings.require_database_url())
            if url.password:
                env["PGPASSWORD"] = str(url.password)
            target = url.set(drivername="postgresql", password=None).render_as_string(
                hide_password=False)
        # psql handles Ctrl-C itself (it cancels the query); this process must not die of it
        # and stop the embedded server under psql.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            code = subprocess.call([binary, target, *psql_args], env=env,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                    signal.SIG_DFL))
        finally:
            signal.signal(signal.SIGINT, previous)
    sys.exit(code)
