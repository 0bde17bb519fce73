"""The memories' HNSW index exists only where a configured read path reads it.

``ix_companion_memories_embedding_hnsw`` (partial on current rows, 0028) is read by two plans
only: recall with RECALL_QUANTIZED_SCAN=false (:mod:`eros.recall.db.recall_hnsw_sql`) and a
consolidation pass of a user with no recall cells above CONSOLIDATION_HNSW_ABOVE (0 = never,
the default). Recall's default plans (the quantised scan, the cells) and consolidation's
(exact, sketches, cells, the bulk first pass) never read it, yet every current row written —
each classified memory, each canonical row of a pass — paid its insert into the graph: ~2.6 ms
of a classified session's ~15 ms of machine CPU, and 130 of a 50k first pass's ~190 s
(bench/RESULTS.md).

So the index is not part of the alembic schema from 0031 on (the migrations leave it as it
is; they read no settings); ``eros migrate`` (and ``eros run``) keep it in step with the
settings after the migrations, the same on a fresh database and an upgraded one: built
``CONCURRENTLY`` (writes go on) when a reader is configured, dropped ``CONCURRENTLY`` when none
is. A worker or CLI process configured to read it refuses to start
while it is missing (:func:`check`), naming the variable and the command that builds it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, text

from eros.db.schema import HNSW_INDEX, SCHEMA, hnsw_index_sql
from eros.errors import ConfigError
from eros.settings import Settings

log = logging.getLogger(__name__)

QUALIFIED = f"{SCHEMA}.{HNSW_INDEX}"
DROP = f"DROP INDEX CONCURRENTLY IF EXISTS {QUALIFIED}"


def readers(settings: Settings) -> list[str]:
    """The settings that make a plan read the index (empty: nothing reads it)."""
    out = []
    if not settings.recall_quantized_scan:
        out.append("RECALL_QUANTIZED_SCAN=false")
    if settings.consolidation_hnsw_above:
        out.append(f"CONSOLIDATION_HNSW_ABOVE={settings.consolidation_hnsw_above}")
    return out


def wanted(settings: Settings) -> bool:
    return bool(readers(settings))


def state(conn: Connection) -> str:
    """``valid``, ``invalid`` (a concurrent build that failed) or ``missing``."""
    valid = conn.execute(text(
        "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(:n)"),
        {"n": QUALIFIED}).scalar()
    return "missing" if valid is None else ("valid" if valid else "invalid")


def sync_sql(settings: Settings) -> str:
    """What :func:`sync` runs, as SQL (``eros migrate --sql``): outside a transaction."""
    why = ", ".join(readers(settings)) or "nothing reads it"
    if wanted(settings):
        return (f"-- the memories' HNSW index ({why}); outside a transaction\n"
                f"{hnsw_index_sql(concurrently=True)};\n")
    return f"-- the memories' HNSW index ({why}): dropped\n{DROP};\n"


def sync(engine: Engine, settings: Settings,
         echo: Callable[[str], None] = log.info) -> str:
    """Build or drop the index as the settings need; idempotent. Returns what it did:
    ``built``, ``dropped``, ``present`` or ``absent``. A build left invalid by an interrupted
    earlier run is dropped and built again. The build and the drop take no lock that stops
    recall or writes (CONCURRENTLY); the build has no statement limit (minutes for millions of
    rows: give the server a generous ``maintenance_work_mem``)."""
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        now = state(conn)
        if not wanted(settings):
            if now == "missing":
                return "absent"
            echo("dropping the memories' HNSW index: RECALL_QUANTIZED_SCAN is on and "
                 "CONSOLIDATION_HNSW_ABOVE is 0, so no plan reads it")
            conn.execute(text(DROP))
            return "dropped"
        if now == "valid":
            return "present"
        if now == "invalid":
            conn.execute(text(DROP))
        rows = conn.execute(text(f"SELECT reltuples::bigint FROM pg_class WHERE oid ="
                                 f" '{SCHEMA}.companion_memories'::regclass")).scalar_one()
        echo(f"building the memories' HNSW index for {', '.join(readers(settings))} "
             f"(about {max(int(rows), 0)} memories; CONCURRENTLY: recall and writes go on)")
        started = time.perf_counter()
        conn.execute(text("SET statement_timeout = 0"))
        conn.execute(text(hnsw_index_sql(concurrently=True)))
        echo(f"built the memories' HNSW index in {time.perf_counter() - started:.1f}s")
        return "built"


def check(conn: Connection, settings: Settings) -> None:
    """Refuse a process whose settings read the index while it is missing or invalid: its
    plan would scan every row it was meant to skip."""
    require(settings, state(conn))


def require(settings: Settings, now: str) -> None:
    """:func:`check` for a :func:`state` read already."""
    if wanted(settings) and now != "valid":
        raise ConfigError(
            f"{' and '.join(readers(settings))} reads the memories' HNSW index "
            f"({HNSW_INDEX}), which this database does not have: run `eros migrate` with "
            "the same settings to build it, or set RECALL_QUANTIZED_SCAN=true and "
            "CONSOLIDATION_HNSW_ABOVE=0")
