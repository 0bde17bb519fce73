"""Alembic environment: migrations for schema ``engine``, version table kept inside it.

The migrations themselves are self-contained (no import of eros, no environment read: an old
migration gives the same result whatever today's code says). What a run needs from outside —
the vector size, EMBEDDING_DIM — is read here once and handed to them as the migration
context's ``embedding_dim`` option: ``config.attributes["embedding_dim"]`` when the caller set
it (:func:`eros.db.migrate.upgrade`, from its validated settings), else this process's
settings (a plain ``alembic upgrade head``).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text

from eros.db.schema import HNSW_INDEX, SCHEMA, metadata
from eros.db.timeouts import set_migration_timeouts
from eros.settings import load_settings

config = context.config


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url")
    if url:
        return str(load_settings(database_url=url).database_url)
    return load_settings().migration_url()


def _embedding_dim() -> int:
    given = config.attributes.get("embedding_dim")
    return int(given) if given else load_settings(database_url=_url()).embedding_dim


def _include_object(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]
    """Only compare what lives in our schema (the chat product may own other tables). The
    memories' HNSW index is not in the schema: `eros migrate` keeps it as the settings need
    (eros/db/hnsw_index.py, 0031)."""
    if type_ == "table":
        return getattr(obj, "schema", None) == SCHEMA
    return not (type_ == "index" and name == HNSW_INDEX)


def _configure(**kwargs: object) -> None:
    context.configure(
        target_metadata=metadata,
        version_table_schema=SCHEMA,
        include_schemas=True,
        include_object=_include_object,
        compare_type=True,
        embedding_dim=_embedding_dim(),
        **kwargs,
    )


def run_migrations_offline() -> None:
    _configure(url=_url(), literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = config.attributes.get("connection")
    if connectable is None:
        engine = create_engine(_url(), poolclass=pool.NullPool)
        with engine.connect() as connection:
            _run(connection)
        engine.dispose()
    else:
        _run(connectable)


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
    connection.commit()
    _configure(connection=connection)
    with context.begin_transaction():
        # bounded lock waits, unbounded statements (DATABASE_LOCK_TIMEOUT_MS), for
        # this transaction only: through PgBouncer in transaction mode a session setting
        # would stay on the server connection for its next client
        set_migration_timeouts(connection, load_settings(database_url=_url()), local=True)
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
