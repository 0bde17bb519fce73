"""The production topology's database parts, for real, in tests and benchmarks: PgBouncer in
transaction mode in front of the embedded PostgreSQL, and a streaming read replica of it.

Both are started from the embedded server's URL (``postgresql+psycopg://postgres:@/db?host=DIR``,
a Unix socket in its data directory). Run as root, pgserver runs PostgreSQL as its own system
user ``pgserver``; PgBouncer refuses to run as root and the replica's ``postgres`` too, so both
run as the owner of the primary's data directory.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from testkit.redis_process import free_port

#: where the project's scripts/bootstrap installs it (Debian's package).
PGBOUNCER_PATHS = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")


class Unavailable(RuntimeError):
    """The part cannot run on this machine (the message says why): tests skip with it."""


def pgbouncer_binary() -> str:
    """PgBouncer's executable, installed with apt-get when missing and possible."""
    found = shutil.which("pgbouncer") or next(
        (p for p in PGBOUNCER_PATHS if os.access(p, os.X_OK)), None)
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=300)
        subprocess.run(["apt-get", "install", "-y", "-q", "pgbouncer"], env=env,
                       capture_output=True, timeout=600)
        found = shutil.which("pgbouncer") or next(
            (p for p in PGBOUNCER_PATHS if os.access(p, os.X_OK)), None)
        if found:
            return found
        raise Unavailable("pgbouncer is not installed and `apt-get install pgbouncer` failed")
    raise Unavailable("pgbouncer is not installed (scripts/bootstrap installs it with apt-get "
                      "when run as root; otherwise: apt-get install pgbouncer)")


def _owner(path: Path) -> pwd.struct_passwd:
    return pwd.getpwuid(path.stat().st_uid)


def _socket_dir(url: str) -> Path:
    host = make_url(url).query.get("host")
    if not isinstance(host, str):
        raise Unavailable(f"not a Unix-socket URL of the embedded server: {url}")
    return Path(host)


def _as_owner(owner: pwd.struct_passwd) -> dict[str, object]:
    """subprocess arguments that run a child as ``owner`` (when we are root)."""
    if os.geteuid() != 0 or owner.pw_uid == 0:
        return {}
    return {"user": owner.pw_uid, "group": owner.pw_gid}


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited {proc.returncode}: {log.read_text(errors='replace')}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"not listening after {timeout}s: {log.read_text(errors='replace')}")


@dataclass
class PgBouncer:
    """A running PgBouncer: ``url(database)`` gives a client URL through it."""

    port: int
    pool_size: int
    proc: subprocess.Popen[bytes]
    dir: Path
    user: str

    def url(self, database: str) -> str:
        return (f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}")

    @property
    def log(self) -> str:
        return (self.dir / "pgbouncer.log").read_text(errors="replace")


@contextlib.contextmanager
def pgbouncer(server_url: str, *, pool_size: int = 8, mode: str = "transaction",
              max_client_conn: int = 2000) -> Iterator[PgBouncer]:
    """PgBouncer on a free port in ``mode`` in front of the embedded server at ``server_url``:
    every database, at most ``pool_size`` server connections per database (PgBouncer's
    ``max_db_connections``; clients beyond it wait in PgBouncer's queue), no reset query."""
    binary = pgbouncer_binary()
    sockets = _socket_dir(server_url)
    owner = _owner(sockets)
    user = make_url(server_url).username or "postgres"
    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="erosbouncer", dir="/tmp"))
    (work / "userlist.txt").write_text(f'"{user}" ""\n')
    (work / "pgbouncer.ini").write_text("\n".join([
        "[databases]",
        f"* = host={sockets} port={make_url(server_url).port or 5432}",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        "unix_socket_dir =",
        "auth_type = trust",
        f"auth_file = {work / 'userlist.txt'}",
        f"pool_mode = {mode}",
        f"default_pool_size = {pool_size}",
        f"max_db_connections = {pool_size}",
        "reserve_pool_size = 0",
        "min_pool_size = 0",
        f"max_client_conn = {max_client_conn}",
        "server_reset_query =",
        f"admin_users = {user}",
        f"logfile = {work / 'pgbouncer.log'}",
        f"pidfile = {work / 'pgbouncer.pid'}",
        "",
    ]))
    (work / "pgbouncer.log").touch()
    if os.geteuid() == 0:
        for path in (work, *work.iterdir()):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    args = [binary, str(work / "pgbouncer.ini")]
    if os.geteuid() == 0:
        args[1:1] = ["-u", owner.pw_name]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        _wait_port(port, proc, work / "pgbouncer.log")
        yield PgBouncer(port, pool_size, proc, work, user)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # PgBouncer's immediate shutdown
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


def _bin(name: str) -> str:
    import pgserver

    return str(Path(pgserver.__file__).parent / "pginstall" / "bin" / name)


@dataclass
class Replica:
    """A streaming standby of the embedded server, on its own socket directory and port."""

    datadir: Path
    port: int
    user: str
    owner: pwd.struct_passwd

    def url(self, database: str) -> str:
        return (f"postgresql+psycopg://{self.user}:@/{database}"
                f"?host={self.datadir}&port={self.port}")

    def pg_ctl(self, *args: str, timeout: float = 60) -> None:
        subprocess.run([_bin("pg_ctl"), "-D", str(self.datadir), *args], check=True,
                       capture_output=True, timeout=timeout, **_as_owner(self.owner))  # type: ignore[call-overload]

    def kill(self) -> None:
        """Stop it at once (``immediate``: connections cut, no checkpoint), as a crash would."""
        self.pg_ctl("-w", "-m", "immediate", "stop")

    def start(self) -> None:
        self.pg_ctl("-w", "-l", str(self.datadir / "log"), "-o",
                    f"-p {self.port} -k {self.datadir} -h ''", "start")


@contextlib.contextmanager
def streaming_replica(server_url: str) -> Iterator[Replica]:
    """``pg_basebackup -R`` of the embedded server into a new directory, started as a hot
    standby streaming from it (its socket, port and data directory of its own)."""
    sockets = _socket_dir(server_url)
    owner = _owner(sockets)
    primary = make_url(server_url)
    user = primary.username or "postgres"
    datadir = Path(tempfile.mkdtemp(prefix="erosrep", dir="/tmp"))
    if os.geteuid() == 0:
        os.chown(datadir, owner.pw_uid, owner.pw_gid)
    os.chmod(datadir, 0o700)
    subprocess.run([_bin("pg_basebackup"), "-h", str(sockets), "-p",
                    str(primary.port or 5432), "-U", user, "-D", str(datadir), "-R",
                    "-X", "stream", "-c", "fast"], check=True, capture_output=True,
                   timeout=120, **_as_owner(owner))  # type: ignore[call-overload]
    replica = Replica(datadir, free_port(), user, owner)
    try:
        replica.start()
        yield replica
    finally:
        with contextlib.suppress(Exception):
            replica.pg_ctl("-w", "-m", "immediate", "stop", timeout=30)
        shutil.rmtree(datadir, ignore_errors=True)


@contextlib.contextmanager
def replica_heartbeat(primary_url: str, every: float = 1.0) -> Iterator[None]:
    """The primary's replica heartbeat while the block runs, written as beat writes it
    (:func:`eros.db.replica_sql.beat` every ``every`` seconds) from a thread."""
    import threading

    from sqlalchemy import create_engine

    from eros.db import replica_sql

    engine = create_engine(primary_url, pool_size=1)
    stop = threading.Event()

    def run() -> None:
        while True:
            with engine.begin() as conn:
                replica_sql.beat(conn)
            if stop.wait(every):
                return

    with engine.begin() as conn:  # the first beat before the block starts
        replica_sql.beat(conn)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
        engine.dispose()
