"""The bulk first pass (issue 34) beside today's, for bench/consolidation_bench.py: the scratch
database is copied just before today's first pass (``CREATE DATABASE … TEMPLATE``), the bulk
first pass runs on the copy (the whole backlog, whatever the size), and where today's pass ran
the whole backlog too, the two end states are compared: the same memories merged or superseded
into the same results (a canonical row by its text: its id is random in each run)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from eros.consolidation.services.consolidate import Consolidator
from eros.consolidation.services.consolidation_bulk import first_pass
from eros.consolidation.services.consolidation_report import ConsolidationReport

DECISIONS = text("""
SELECT m.id, m.status, COALESCE(r.content, CAST(m.replaced_by AS text)) AS into
  FROM engine.companion_memories m
  LEFT JOIN engine.companion_memories r ON r.id = m.replaced_by
 WHERE m.user_id = :u AND m.status <> 'current'
""")


def decisions(engine: Engine, user: uuid.UUID) -> set[tuple[Any, ...]]:
    with engine.connect() as conn:
        return {tuple(r) for r in conn.execute(DECISIONS, {"u": user})}


@contextmanager
def copy_of(engine: Engine, url: str) -> Iterator[str]:
    """A copy of the scratch database as it is now (``engine``'s connections are closed)."""
    engine.dispose()
    source = make_url(url)
    name = f"{source.database}_bulk"
    admin = create_engine(source.set(database="postgres"), isolation_level="AUTOCOMMIT",
                          pool_size=1)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{source.database}"'))
        yield source.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _db_ms(r: ConsolidationReport) -> float:
    return r.timings.get("read", 0.0) + r.timings.get("write", 0.0) \
        + r.timings.get("bulk_read", 0.0)


def run_bulk(copy_url: str, c: Consolidator, user: uuid.UUID) -> tuple[dict[str, Any],
                                                                       set[tuple[Any, ...]]]:
    """The bulk first pass over the copy's whole backlog, and its end state's decisions."""
    engine = create_engine(copy_url, pool_size=2)
    try:
        bulk = Consolidator(c.settings, engine, c.llm, c.embedder, c.prompt)
        started = time.perf_counter()
        reports = first_pass(bulk, user)
        while reports[-1].backlog and reports[-1].compared:  # not due: one pass a call
            reports += first_pass(bulk, user)
        wall = round((time.perf_counter() - started) * 1000, 1)
        made = decisions(engine, user)
    finally:
        engine.dispose()
    first = reports[0].timings
    return {"passes": len(reports), "compared": sum(r.compared for r in reports),
            "merged": sum(r.merged for r in reports),
            "superseded": sum(r.superseded for r in reports),
            "canonical": sum(r.canonical_written for r in reports), "bulk": "bulk_read" in first,
            "db_ms": round(sum(_db_ms(r) for r in reports), 1),
            "bulk_read_ms": first.get("bulk_read", 0.0),
            "read_ms": round(sum(r.timings.get("read", 0.0) for r in reports), 1),
            "write_ms": round(sum(r.timings.get("write", 0.0) for r in reports), 1),
            # the bulk read's one transaction is its snapshot (its products run after it)
            "max_txn_ms": max(max(r.timings.get("read", 0.0), r.timings.get("write", 0.0),
                                  r.timings.get("bulk_snapshot", 0.0)) for r in reports),
            "bulk_snapshot_ms": first.get("bulk_snapshot", 0.0),
            "wall_ms": wall, "left": reports[-1].backlog}, made
