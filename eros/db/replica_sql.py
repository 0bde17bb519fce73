"""The SQL of reading a streaming replica: how far its replay is behind."""

from __future__ import annotations

from sqlalchemy import Connection, text

# Behind = the WAL received but not yet replayed, aged by the last replayed commit's time. A
# replica that has replayed all it received is not behind (an idle primary sends no commits,
# so the last replay time alone would grow without bound); a server not in recovery (a
# promoted replica, or DATABASE_REPLICA_URL pointing at a primary) is never behind.
_LAG = text("""
SELECT CASE
         WHEN NOT pg_is_in_recovery() THEN 0
         WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
         ELSE COALESCE(extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())
                       * 1000, 'Infinity')
       END::float8 AS lag_ms
""")


def replica_lag_ms(conn: Connection) -> float:
    """Milliseconds the server behind ``conn`` lags its primary (0 when caught up)."""
    return float(conn.execute(_LAG).scalar_one())
