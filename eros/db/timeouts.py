"""Statement, lock and idle-transaction timeouts (without them nothing bounded a statement).

Every connection a worker's engine opens carries the DATABASE_* timeouts as server options, so
a killed task's query, a lock queue or a forgotten transaction cannot hold the database
unbounded; a use with its own budget (recall, the consolidation self-join) sets a
transaction-local statement timeout on top. 0 turns a timeout off.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from eros.settings import Settings

_SET_LOCAL = text("SELECT set_config('statement_timeout', :ms, true)")


def connect_options(settings: Settings) -> str:
    """The libpq ``options`` string with this process's timeouts."""
    return " ".join([
        f"-c statement_timeout={settings.database_statement_timeout_ms}",
        f"-c lock_timeout={settings.database_lock_timeout_ms}",
        f"-c idle_in_transaction_session_timeout="
        f"{settings.database_idle_in_transaction_timeout_ms}",
    ])


def local_timeouts(settings: Settings) -> str:
    """One statement setting the three limits for the current transaction only (``SET
    LOCAL``): the form used behind PgBouncer in transaction mode (DATABASE_POOL_MODE)."""
    return ("SELECT"
            f" set_config('statement_timeout', '{settings.database_statement_timeout_ms}', true),"
            f" set_config('lock_timeout', '{settings.database_lock_timeout_ms}', true),"
            " set_config('idle_in_transaction_session_timeout',"
            f" '{settings.database_idle_in_transaction_timeout_ms}', true)")


def set_statement_timeout(conn: Connection, ms: int) -> None:
    """Bound the statements of the current transaction by ``ms`` (until it ends)."""
    conn.execute(_SET_LOCAL, {"ms": str(int(ms))})


def set_migration_timeouts(conn: Connection, settings: Settings, *, local: bool = False) -> None:
    """Migrations: no statement limit (an index build may take minutes) but a lock wait
    bounded by DATABASE_LOCK_TIMEOUT_MS, so a migration queued behind a long transaction
    fails instead of stalling every query queued behind it. ``local``: for this transaction
    only (through PgBouncer in transaction mode a session setting would outlive the client)."""
    conn.execute(text("SELECT set_config('statement_timeout', '0', :local),"
                      " set_config('lock_timeout', :ms, :local)"),
                 {"ms": str(settings.database_lock_timeout_ms), "local": local})
