"""Helpers for the erasure tests: scan schema engine for an id, wait for a blocked backend."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable

from sqlalchemy import Engine, text


def rows_mentioning(engine: Engine, ids: Iterable[uuid.UUID], *,
                    with_log: bool = False) -> dict[str, int]:
    """For every table of schema ``engine``: how many rows mention any of ``ids`` anywhere
    (the whole row cast to text, so arrays, JSON and future columns count too).
    ``erasure_log`` — the record that an erasure happened, ids and counts only — is left out
    unless ``with_log``."""
    found: dict[str, int] = {}
    patterns = [f"%{i}%" for i in ids]
    with engine.connect() as conn:
        tables = conn.execute(text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'engine'"
            " AND table_type = 'BASE TABLE' ORDER BY 1")).scalars().all()
        assert "companion_memories" in tables and "chat_messages" in tables
        for table in tables:
            if table == "erasure_log" and not with_log:
                continue
            n = conn.execute(text(
                f'SELECT count(*) FROM engine."{table}" AS t'
                " WHERE CAST(t AS text) LIKE ANY(CAST(:p AS text[]))"), {"p": patterns}).scalar()
            if n:
                found[table] = int(n)
    return found


def wait_for_lock_wait(engine: Engine, query_prefix: str, *, timeout: float = 20.0) -> None:
    """Block until some backend running a statement that starts with ``query_prefix`` waits
    for a lock: the barrier that says "this step has happened" (polled, not slept on)."""
    deadline = time.monotonic() + timeout
    with engine.connect() as conn:
        while time.monotonic() < deadline:
            n = conn.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND ltrim(query, E' \\n') LIKE :q"), {"q": query_prefix + "%"}).scalar()
            if n:
                return
            conn.rollback()
            time.sleep(0.02)
    raise AssertionError(f"no backend waited for a lock in {query_prefix!r}")
