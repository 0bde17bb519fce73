"""The SQL of reading a streaming replica: how far its replay is behind, and the heartbeat the
primary writes so that a replica cut off from its primary cannot look caught up."""

from __future__ import annotations

from sqlalchemy import Connection, text

# Behind = the larger of two readings (0 on a server not in recovery: a promoted replica, or
# DATABASE_REPLICA_URL pointing at a primary):
# - the WAL received but not yet replayed, aged by the last replayed commit's time (0 when all
#   received WAL is replayed: an idle primary sends no commits, so the last replay time alone
#   would grow without bound);
# - with a heartbeat (:hb_ms > 0): how overdue the primary's heartbeat is — its replayed
#   beat_at's age beyond two heartbeat periods (one beat may be late without counting), or
#   Infinity when no heartbeat was ever replayed. A replica whose WAL receiver is disconnected
#   has received = replayed, so the first reading is 0 — but its heartbeat stops moving.
_LAG = text("""
SELECT CASE
         WHEN NOT pg_is_in_recovery() THEN 0
         ELSE GREATEST(
           CASE
             WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
             ELSE COALESCE(extract(epoch FROM clock_timestamp()
                                   - pg_last_xact_replay_timestamp()) * 1000, 'Infinity')
           END,
           CASE
             WHEN CAST(:hb_ms AS float8) <= 0 THEN 0
             ELSE COALESCE((SELECT extract(epoch FROM clock_timestamp() - beat_at) * 1000
                                   - 2 * CAST(:hb_ms AS float8)
                              FROM engine.replica_heartbeat WHERE id = 1), 'Infinity')
           END)
       END::float8 AS lag_ms
""")

_BEAT = text("""
INSERT INTO engine.replica_heartbeat (id, beat_at) VALUES (1, clock_timestamp())
ON CONFLICT (id) DO UPDATE SET beat_at = EXCLUDED.beat_at
""")


def replica_lag_ms(conn: Connection, heartbeat_secs: float = 0.0) -> float:
    """Milliseconds the server behind ``conn`` lags its primary (0 when caught up); with
    ``heartbeat_secs`` > 0 an overdue heartbeat counts as lag."""
    return max(0.0, float(conn.execute(_LAG, {"hb_ms": heartbeat_secs * 1000}).scalar_one()))


def beat(conn: Connection) -> None:
    """The primary's heartbeat: ``beat_at`` = now (one row, one small WAL record)."""
    conn.execute(_BEAT)
