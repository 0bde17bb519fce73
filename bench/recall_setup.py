"""Setting up the recall benchmark: the tuned server, the loaded and indexed database, the
clustered heavy users, warm buffers and the sizes reported (see bench/recall_bench.py)."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, text

from bench import recall_data as rd
from eros.db.migrate import upgrade
from eros.db.schema import hnsw_index_sql
from eros.recall.services import recall_cells
from eros.recall.services.recall_cells import ClusterReport
from eros.settings import Settings

DB = "eros_recall_bench"
HNSW = hnsw_index_sql(options="WITH (m = 16, ef_construction = 64)")
#: as migration 0007 creates it; built after the load, like HNSW (a bulk load is faster so).
SKETCH_INDEX = ("CREATE INDEX ix_companion_memories_recall_bq ON engine.companion_memories"
                " (user_id, instance_id, category, status) INCLUDE (id, embedding_bq)")
#: as migration 0008 creates it: the mirror's index, also built after the load.
PROBE_INDEX = ("CREATE INDEX ix_memory_sketches_probe ON engine.memory_sketches"
               " (user_id, instance_id, status, cell) INCLUDE (memory_id, sketch)")
#: as migration 0015 creates it: grouped recall's per-category walk over the cells.
CATEGORY_INDEX = ("CREATE INDEX ix_memory_sketches_category ON engine.memory_sketches"
                  " (user_id, instance_id, category, status, cell) INCLUDE (memory_id, sketch)")


# --- the server -----------------------------------------------------------------------------
@contextmanager
def bench_server(data_dir: Path | None, shared_buffers: str, keep: bool) -> Iterator[str]:
    """``EROS_BENCH_DATABASE_URL``, or an embedded server restarted with ``shared_buffers``
    (the default 128 MB would measure the OS page cache, not PostgreSQL). The embedded server
    is stopped at the end; its data directory is deleted unless ``keep`` (reuse it with
    ``--data-dir DIR --keep`` to skip loading and index building next time)."""
    given = os.environ.get("EROS_BENCH_DATABASE_URL")
    if given:
        yield given.replace("postgresql://", "postgresql+psycopg://", 1)
        return
    import shutil
    import tempfile

    import pgserver
    from pgserver._commands import pg_ctl

    directory = data_dir or Path(tempfile.mkdtemp(prefix="erosrb", dir="/tmp"))
    server = pgserver.get_server(directory, cleanup_mode=None)
    admin = create_engine(server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1),
                          isolation_level="AUTOCOMMIT")
    wanted = {"shared_buffers": shared_buffers, "max_wal_size": "8GB"}  # fewer checkpoints
    with admin.connect() as conn:
        changed = []
        for name, value in wanted.items():
            if conn.execute(text(f"SHOW {name}")).scalar_one() != value:
                conn.execute(text(f"ALTER SYSTEM SET {name} = '{value}'"))
                changed.append(name)
        conn.execute(text("SELECT pg_reload_conf()"))
    admin.dispose()
    if "shared_buffers" in changed:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=directory, user=server.system_user)
        server = pgserver.PostgresServer(directory, cleanup_mode=None)
    try:
        yield server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
    finally:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=directory, user=server.system_user)
        if not keep and data_dir is None:
            shutil.rmtree(directory, ignore_errors=True)


def database_url(server_url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(server_url).set(database=DB).render_as_string(hide_password=False)


def drop_database(server_url: str) -> None:
    """Drop the bench database (the end of a run without ``--keep``)."""
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)'))
    admin.dispose()


def schema_head() -> str:
    """The alembic head: a kept database migrated to an older schema is rebuilt, not reused."""
    from alembic.script import ScriptDirectory

    from eros.db.migrate import alembic_config

    return str(ScriptDirectory.from_config(alembic_config("postgresql://")).get_current_head())


def population(args: Any) -> tuple[list[int], dict[str, Any], rd.Population]:
    """The population both recall benches build from ``--memories/--users/--heavy/--dim``:
    heavy users' sizes, the parameters a kept database is checked against, the rows. Sets
    EMBEDDING_DIM for a non-default ``--dim`` (the vector column is sized at creation)."""
    if args.dim != 512:
        os.environ["EMBEDDING_DIM"] = str(args.dim)
    heavy = [int(h) for h in args.heavy.split(",") if h.strip()]
    params = {"memories": args.memories, "users": args.users, "heavy": heavy, "dim": args.dim,
              "data": 2, "schema": schema_head()}
    return heavy, params, rd.make_population(args.memories, args.users, heavy, args.dim)


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


# --- preparing the data ---------------------------------------------------------------------
def prepare(server_url: str, pop: rd.Population, params: dict[str, Any], mwm: str
            ) -> dict[str, float]:
    """Create, migrate, load and index the bench database, unless a previous run with the same
    parameters left it behind (``--keep``): loading and building take minutes."""
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    url = database_url(server_url)
    with admin.connect() as conn:
        exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"),
                              {"d": DB}).scalar()
    if exists:
        engine = create_engine(url)
        with engine.connect() as conn:
            stored = conn.execute(text(
                "SELECT meta FROM bench_meta")).scalar() if conn.execute(text(
                    "SELECT to_regclass('public.bench_meta')")).scalar() else None
        engine.dispose()
        if stored and stored.get("params") == params:
            print("reusing the loaded database of a previous --keep run", flush=True)
            return dict(stored.get("timings", {}))
        if stored and {**stored.get("params", {}), "schema": params["schema"]} == params:
            return _upgrade_kept(url, params, dict(stored.get("timings", {})), mwm)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{DB}" WITH (FORCE)'))
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{DB}"'))
    admin.dispose()
    upgrade(url)
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    timings: dict[str, float] = {}
    with engine.connect() as conn:
        conn.execute(text("DROP INDEX IF EXISTS engine.ix_companion_memories_embedding_hnsw"))
        conn.execute(text("DROP INDEX engine.ix_companion_memories_recall_bq"))
        conn.execute(text("DROP INDEX engine.ix_memory_sketches_probe"))
        conn.execute(text("DROP INDEX engine.ix_memory_sketches_category"))
    started = time.monotonic()
    rd.load(_plain(url), pop)
    timings["load_s"] = time.monotonic() - started
    started = time.monotonic()
    with engine.connect() as conn:
        conn.execute(text(f"SET maintenance_work_mem = '{mwm}'"))
        conn.execute(text(SKETCH_INDEX))
        conn.execute(text(PROBE_INDEX))
        conn.execute(text(CATEGORY_INDEX))
    timings["sketch_index_s"] = time.monotonic() - started
    started = time.monotonic()
    with engine.connect() as conn:
        conn.execute(text("VACUUM ANALYZE engine.companion_memories"))
        conn.execute(text("VACUUM ANALYZE engine.memory_sketches"))
    timings["vacuum_s"] = time.monotonic() - started
    started = time.monotonic()
    with engine.connect() as conn:
        conn.execute(text(f"SET maintenance_work_mem = '{mwm}'"))
        conn.execute(text("SET max_parallel_maintenance_workers = "
                          f"{max(0, (os.cpu_count() or 1) - 1)}"))
        print("building the HNSW index …", flush=True)
        conn.execute(text(HNSW))
    timings["hnsw_build_s"] = time.monotonic() - started
    with engine.connect() as conn:
        _save_meta(conn, params, timings)
    engine.dispose()
    return timings


def _save_meta(conn: Connection, params: dict[str, Any], timings: dict[str, float]) -> None:
    """What a later ``--keep`` run compares its parameters with, and the timings it reports."""
    conn.execute(text("CREATE TABLE IF NOT EXISTS bench_meta (meta jsonb)"))
    conn.execute(text("DELETE FROM bench_meta"))
    conn.execute(text("INSERT INTO bench_meta VALUES (CAST(:m AS jsonb))"),
                 {"m": json.dumps({"params": params, "timings": timings})})


def _upgrade_kept(url: str, params: dict[str, Any], timings: dict[str, float], mwm: str
                  ) -> dict[str, float]:
    """A kept database of an older schema with the same data: migrate it in place (and time
    the upgrade on a million rows) rather than reload and rebuild HNSW."""
    print(f"upgrading the kept database to {params['schema']} …", flush=True)
    started = time.monotonic()
    os.environ["PGOPTIONS"] = f"-c maintenance_work_mem={mwm}"
    try:
        upgrade(url)
    finally:
        os.environ.pop("PGOPTIONS", None)
    timings["upgrade_s"] = time.monotonic() - started
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("VACUUM ANALYZE engine.memory_sketches"))
        _save_meta(conn, params, timings)
    engine.dispose()
    return timings


def cluster_heavy(engine: Engine, cfg: Settings, heavy: list[uuid.UUID]) -> list[ClusterReport]:
    """What beat's ``eros.cluster_memories`` does for the users due — the heavy ones (the
    light ones have at most ~1,100 memories, under RECALL_CELL_MIN_ROWS) — clustered again on
    every run, so each run times it (a kept database keeps its cells); then the mirror is
    vacuumed so the probe's scans stay index-only."""
    reports = [recall_cells.cluster_user(engine, cfg, user) for user in heavy]
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE engine.memory_sketches"))
    return reports


def warm(engine: Engine) -> int:
    """Read the heap and the btrees recall uses into shared_buffers; returns their MB.

    A restarted server starts cold, and this machine's page cache keeps little, so without
    this every method pays disk reads for whatever it touches first. A sequential scan does not
    warm anything (a table over a quarter of shared_buffers is read through a small ring
    buffer); a bitmap heap scan over all rows and index-only scans of each btree use the shared
    buffers. HNSW (2.6 GB) is warmed only by the warm-up queries."""
    reads = [
        # every heap page, in physical order (a bitmap over the user-keyed index)
        "SELECT count(*) FROM engine.companion_memories WHERE user_id IS NOT NULL"
        " AND length(content) >= 0",
        "SELECT count(*) FROM engine.companion_memories WHERE user_id IS NOT NULL",
        "SELECT count(*) FROM engine.companion_memories WHERE id IS NOT NULL",
        "SELECT count(*) FROM engine.memory_sketches WHERE user_id IS NOT NULL",
        "SELECT count(*) FROM engine.memory_sketches WHERE memory_id IS NOT NULL",
        "SELECT count(*) FROM engine.memory_sketches WHERE user_id IS NOT NULL"
        " AND category IS NOT NULL",
        "SELECT count(*) FROM engine.memory_cells WHERE user_id IS NOT NULL"]
    with engine.connect() as conn, conn.begin():
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        conn.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))
        conn.execute(text("SET LOCAL enable_indexscan = off"))
        conn.execute(text(reads[0]))  # bitmap heap scan
        conn.execute(text("SET LOCAL enable_indexscan = on"))
        conn.execute(text("SET LOCAL enable_bitmapscan = off"))
        for sql in reads[1:]:  # index-only scans
            conn.execute(text(sql))
        return int(conn.execute(text(
            "SELECT sum(pg_relation_size(c.oid)) / 1048576 FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'engine'"
            " AND (c.relname IN ('companion_memories', 'memory_sketches', 'memory_cells')"
            " OR c.relname IN ('companion_memories_pkey', 'ix_companion_memories_recall_bq',"
            " 'memory_sketches_pkey', 'ix_memory_sketches_probe', 'ix_memory_sketches_category',"
            " 'memory_cells_pkey'))"
        )).scalar_one())


def sizes(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        row = conn.execute(text(
            "SELECT pg_size_pretty(pg_relation_size('engine.companion_memories')) AS heap,"
            " pg_size_pretty(pg_relation_size('engine.ix_companion_memories_embedding_hnsw'))"
            " AS hnsw, pg_size_pretty(pg_relation_size('engine.ix_companion_memories_recall_bq'))"
            " AS sketch, pg_size_pretty(pg_total_relation_size('engine.companion_memories'))"
            " AS total, pg_size_pretty(pg_total_relation_size('engine.memory_sketches'))"
            " AS mirror")).one()
    return {"heap": row.heap, "hnsw": row.hnsw, "sketch": row.sketch, "total": row.total,
            "mirror": row.mirror}
