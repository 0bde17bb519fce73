"""DATABASE_POOL_SIZE / DATABASE_MAX_OVERFLOW: validated with the variable named, and applied
to each process's engine (0 = NullPool, for PgBouncer in transaction mode)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.pool import NullPool, QueuePool

from eros.core.green import green_process
from eros.db.engine import GREEN_POOL_SIZE, configured_pool, configured_pool_size, make_engine
from eros.errors import ConfigError
from eros.settings import Settings, load_settings

URL = "postgresql+psycopg://u@127.0.0.1:1/db"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    yield


@pytest.mark.parametrize(("name", "value"), [("DATABASE_POOL_SIZE", "-1"),
                                             ("DATABASE_POOL_SIZE", "many"),
                                             ("DATABASE_MAX_OVERFLOW", "-2"),
                                             ("DATABASE_MAX_OVERFLOW", "1001")])
def test_invalid_pool_settings_name_the_variable(monkeypatch: pytest.MonkeyPatch, name: str,
                                                 value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert name in str(info.value)


def test_defaults_keep_the_old_pool() -> None:
    engine = make_engine(URL, settings=load_settings())
    assert isinstance(engine.pool, QueuePool)
    assert (engine.pool.size(), engine.pool._max_overflow) == (5, 5)


def test_settings_size_the_pool_and_zero_means_no_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_POOL_SIZE", "40")
    monkeypatch.setenv("DATABASE_MAX_OVERFLOW", "8")
    engine = make_engine(URL, settings=load_settings())
    assert isinstance(engine.pool, QueuePool)
    assert (engine.pool.size(), engine.pool._max_overflow) == (40, 8)
    # an explicit size (the CLI's short-lived engines) wins over the setting
    assert make_engine(URL, pool_size=2, settings=load_settings()).pool.size() == 2
    monkeypatch.setenv("DATABASE_POOL_SIZE", "0")
    assert isinstance(make_engine(URL, settings=load_settings()).pool, NullPool)


def test_a_process_without_gevent_patching_is_not_a_green_pool() -> None:
    assert green_process() is False
    assert configured_pool_size(load_settings()) == 5


def test_a_gevent_process_gets_the_green_pool_unless_one_is_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    patched = types.SimpleNamespace(is_module_patched=lambda name: name == "socket")
    monkeypatch.setitem(sys.modules, "gevent.monkey", patched)
    assert green_process() is True
    # the overflow is held too (tests/integration/test_green_pool_held.py): same ceiling
    assert configured_pool_size(load_settings()) == GREEN_POOL_SIZE + 5
    pool = make_engine(URL, settings=load_settings()).pool
    assert (pool.size(), pool._max_overflow) == (GREEN_POOL_SIZE + 5, 0)  # type: ignore[attr-defined]
    monkeypatch.setenv("DATABASE_MAX_OVERFLOW", "8")
    assert configured_pool(load_settings()) == (GREEN_POOL_SIZE + 8, 0)
    monkeypatch.setenv("DATABASE_POOL_SIZE", "3")  # an explicit setting always wins
    assert configured_pool(load_settings()) == (3, 8)
    pool = make_engine(URL, settings=load_settings()).pool
    assert (pool.size(), pool._max_overflow) == (3, 8)  # type: ignore[attr-defined]
