"""A gevent worker's pool holds its overflow connections: a wave of demand above
GREEN_POOL_SIZE opens the extra PostgreSQL backends once, and the next wave reuses them
(SQLAlchemy closes a plain overflow connection at checkin, and each reopened one was a backend
start and warm-up: ~15 ms of PostgreSQL CPU, bench/RESULTS.md issue 34)."""

from __future__ import annotations

import sys
import types

import pytest
from sqlalchemy import text

from eros.db.engine import GREEN_POOL_SIZE, make_engine
from eros.settings import Settings, load_settings


@pytest.fixture
def green(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as a gevent worker sees itself (socket patched), pool settings unset."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    patched = types.SimpleNamespace(is_module_patched=lambda name: name == "socket")
    monkeypatch.setitem(sys.modules, "gevent.monkey", patched)


def _wave(engine: object, n: int) -> set[int]:
    """``n`` connections checked out at once (as many greenlets in their short statements),
    then all returned; the backends that served them."""
    conns = [engine.connect() for _ in range(n)]  # type: ignore[attr-defined]
    try:
        return {int(c.execute(text("SELECT pg_backend_pid()")).scalar_one()) for c in conns}
    finally:
        for c in conns:
            c.close()


def test_a_green_pool_reuses_the_backends_a_wave_above_its_size_opened(
        green: None, db_url: str) -> None:
    settings = load_settings()
    ceiling = GREEN_POOL_SIZE + settings.database_max_overflow
    engine = make_engine(db_url, settings=settings)
    try:
        first = _wave(engine, ceiling)
        assert len(first) == ceiling
        second = _wave(engine, ceiling)
        assert second == first, f"{len(second - first)} backends opened again"
        # the ceiling did not move: every connection is held, none beyond it
        assert engine.pool.size() + engine.pool._max_overflow == ceiling  # type: ignore[attr-defined]
        assert engine.pool.checkedin() == ceiling  # type: ignore[attr-defined]
    finally:
        engine.dispose()
