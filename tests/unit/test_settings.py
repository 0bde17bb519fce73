"""Configuration: an invalid value must stop start-up with a message naming the variable, and
the timing windows must nest (HTTP < claim-stale; backoff < claim-stale / 2; claim-stale × 2 <
broker visibility), or a slow or retried task would outlive its claim and be run twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eros.errors import ConfigError
from eros.settings import Settings, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Only what a test sets is seen: no variable from the developer's shell leaks in."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    yield


def fails(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    return str(info.value)


def test_defaults_are_the_reference_values() -> None:
    s = load_settings()
    assert (s.dreaming_tick_secs, s.dreaming_idle_secs, s.dreaming_claim_stale_secs) == \
        (300, 1800, 600)
    assert s.dreaming_model == "anthropic/claude-haiku-4.5"
    assert s.embedding_model == "voyage-3.5-lite" and s.embedding_dim == 512
    assert s.openrouter_base_url == "https://openrouter.ai/api/v1"
    assert s.llm_is_offline and s.embedder_is_offline  # no keys: offline, announced elsewhere


@pytest.mark.parametrize(("name", "value"), [
    ("DREAMING_IDLE_SECS", "abc"),
    ("DREAMING_IDLE_SECS", "-1"),
    ("DREAMING_TICK_SECS", "0"),
    ("EMBEDDING_DIM", "0"),
    ("EMBEDDING_DIM", "lots"),
    ("DREAMING_BATCH", "0"),
    ("DREAMING_MAX_ATTEMPTS", "0"),
    ("DREAMING_DISABLED", "perhaps"),
    ("LLM_TIMEOUT_SECS", "0"),
    ("EROS_PROVIDERS", "sometimes"),
    ("EROS_LOG_LEVEL", "chatty"),
    ("DREAMING_TRANSCRIPT_BUDGET_CHARS", "100"),
    ("DATABASE_URL", "mysql://user@host/db"),
    ("DATABASE_URL", "postgresql+asyncpg://user@host/db"),
    ("REDIS_URL", "http://127.0.0.1:6379/0"),
    ("DATABASE_MIGRATE_URL", "mysql://user@host/db"),
    ("DATABASE_REPLICA_URL", "http://replica:5432/db"),
    ("DATABASE_POOL_MODE", "statement"),
    ("RECALL_MAX_REPLICA_LAG_MS", "-1"),
    ("EROS_RECALL_RESULT_EXPIRES_SECS", "0"),
    ("EROS_RECALL_RESULT_EXPIRES_SECS", "soon"),
    ("EROS_RECALL_MESSAGE_EXPIRES_SECS", "-5"),
    ("DREAMING_PROMPT_FILE", "/nonexistent/prompt.txt"),
])
def test_invalid_value_names_its_variable(monkeypatch: pytest.MonkeyPatch, name: str,
                                          value: str) -> None:
    message = fails(monkeypatch, **{name: value})
    assert message.startswith("invalid configuration: ")
    assert name in message


def test_several_invalid_values_are_all_named(monkeypatch: pytest.MonkeyPatch) -> None:
    message = fails(monkeypatch, DREAMING_IDLE_SECS="abc", EMBEDDING_DIM="0")
    assert "DREAMING_IDLE_SECS" in message and "EMBEDDING_DIM" in message


def test_lowercase_variable_names_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("dreaming_batch", "7")
    assert load_settings().dreaming_batch == 7


@pytest.mark.parametrize(("given", "expected"), [
    ("postgres://u:p@h:5432/db", "postgresql+psycopg://u:p@h:5432/db"),
    ("postgresql://u@h/db?sslmode=require", "postgresql+psycopg://u@h/db?sslmode=require"),
    ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
])
def test_database_url_gets_the_psycopg_driver(monkeypatch: pytest.MonkeyPatch, given: str,
                                              expected: str) -> None:
    monkeypatch.setenv("DATABASE_URL", given)
    s = load_settings()
    assert s.database_url == expected and s.require_database_url() == expected


def test_migrations_take_the_direct_url_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://eros@pgbouncer:6432/eros")
    assert load_settings().migration_url() == "postgresql+psycopg://eros@pgbouncer:6432/eros"
    monkeypatch.setenv("DATABASE_MIGRATE_URL", "postgres://eros@primary:5432/eros")
    monkeypatch.setenv("DATABASE_REPLICA_URL", "postgres://eros@replica:5432/eros")
    s = load_settings()
    assert s.migration_url() == "postgresql+psycopg://eros@primary:5432/eros"
    assert s.database_replica_url == "postgresql+psycopg://eros@replica:5432/eros"
    assert "eros@" not in repr(s)  # URLs (passwords) never in a repr


def test_empty_urls_are_unset_and_required_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "")
    monkeypatch.setenv("REDIS_URL", "")
    s = load_settings()
    with pytest.raises(ConfigError, match="DATABASE_URL"):
        s.require_database_url()
    with pytest.raises(ConfigError, match="REDIS_URL"):
        s.require_redis_url()


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "rediss://h:6380/1",
                                 "redis+socket:///tmp/redis.sock", "unix:///tmp/r.sock"])
def test_redis_urls_accepted(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("REDIS_URL", url)
    assert load_settings().require_redis_url() == url


def test_claim_stale_must_exceed_worst_case_http(monkeypatch: pytest.MonkeyPatch) -> None:
    # (60 * 2 + 30) * (1 + 1) = 300 s of HTTP in one attempt: a 200 s claim would go stale first
    message = fails(monkeypatch, DREAMING_CLAIM_STALE_SECS="200",
                    DREAMING_RETRY_BACKOFF_MAX_SECS="50")
    assert "DREAMING_CLAIM_STALE_SECS" in message
    assert "LLM_TIMEOUT_SECS" in message and "PROVIDER_MAX_RETRIES" in message


def test_long_timeouts_need_a_longer_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    message = fails(monkeypatch, LLM_TIMEOUT_SECS="280")
    assert "DREAMING_CLAIM_STALE_SECS" in message
    monkeypatch.setenv("DREAMING_CLAIM_STALE_SECS", "1300")  # 1180 s HTTP > 70 % of 1300
    assert "soft time limit" in fails(monkeypatch)
    monkeypatch.setenv("DREAMING_CLAIM_STALE_SECS", "1700")
    monkeypatch.setenv("EROS_VISIBILITY_TIMEOUT_SECS", "3600")
    assert load_settings().llm_timeout_secs == 280


def test_backoff_cap_must_stay_below_half_the_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    message = fails(monkeypatch, DREAMING_RETRY_BACKOFF_MAX_SECS="300")
    assert "DREAMING_RETRY_BACKOFF_MAX_SECS" in message and "DREAMING_CLAIM_STALE_SECS" in message


def test_visibility_timeout_must_exceed_twice_the_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    message = fails(monkeypatch, EROS_VISIBILITY_TIMEOUT_SECS="1200")
    assert "EROS_VISIBILITY_TIMEOUT_SECS" in message and "DREAMING_CLAIM_STALE_SECS" in message
    monkeypatch.setenv("EROS_VISIBILITY_TIMEOUT_SECS", "1201")
    assert load_settings().eros_visibility_timeout_secs == 1201


def test_the_replica_heartbeat_must_fit_twice_in_the_lag(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replica cut off from its primary is noticed once its heartbeat is two periods overdue
    and then by RECALL_MAX_REPLICA_LAG_MS: a period above half the lag stretches the promise."""
    replica = {"DATABASE_REPLICA_URL": "postgresql://replica/db"}
    message = fails(monkeypatch, **replica, RECALL_REPLICA_HEARTBEAT_SECS="3",
                    RECALL_MAX_REPLICA_LAG_MS="5000")
    assert "RECALL_REPLICA_HEARTBEAT_SECS (3)" in message
    assert "RECALL_MAX_REPLICA_LAG_MS (5000 ms)" in message
    assert "RECALL_REPLICA_HEARTBEAT_SECS (1)" in fails(
        monkeypatch, RECALL_REPLICA_HEARTBEAT_SECS="1", RECALL_MAX_REPLICA_LAG_MS="1999")
    monkeypatch.setenv("RECALL_MAX_REPLICA_LAG_MS", "2000")  # exactly two periods: accepted
    assert load_settings().recall_max_replica_lag_ms == 2000
    monkeypatch.setenv("RECALL_MAX_REPLICA_LAG_MS", "0")  # no heartbeat: nothing to fit
    monkeypatch.setenv("RECALL_REPLICA_HEARTBEAT_SECS", "0")
    assert load_settings().recall_replica_heartbeat_secs == 0
    monkeypatch.delenv("DATABASE_REPLICA_URL")  # no replica: neither setting is used
    monkeypatch.setenv("RECALL_REPLICA_HEARTBEAT_SECS", "60")
    assert load_settings().recall_replica_heartbeat_secs == 60
    monkeypatch.delenv("RECALL_REPLICA_HEARTBEAT_SECS")  # the shipped defaults fit: 1 s, 5 s
    monkeypatch.delenv("RECALL_MAX_REPLICA_LAG_MS")
    assert load_settings(database_replica_url="postgresql://replica/db").database_replica_url


@pytest.mark.parametrize(("keys", "missing"), [
    ({}, "OPENROUTER_API_KEY"),
    ({"VOYAGE_API_KEY": "v"}, "OPENROUTER_API_KEY"),
    ({"OPENROUTER_API_KEY": "o"}, "VOYAGE_API_KEY"),
])
def test_live_providers_need_both_keys(monkeypatch: pytest.MonkeyPatch, keys: dict[str, str],
                                       missing: str) -> None:
    message = fails(monkeypatch, EROS_PROVIDERS="live", **keys)
    assert "EROS_PROVIDERS=live" in message and missing in message


def test_live_with_both_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("EROS_PROVIDERS", "live"), ("OPENROUTER_API_KEY", "o"),
                        ("VOYAGE_API_KEY", "v")):
        monkeypatch.setenv(name, value)
    s = load_settings()
    assert not s.llm_is_offline and not s.embedder_is_offline


def test_offline_forces_offline_even_with_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EROS_PROVIDERS", "offline")
    monkeypatch.setenv("OPENROUTER_API_KEY", "o")
    assert load_settings().llm_is_offline


def test_keys_are_not_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret")
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-secret")
    text = repr(load_settings())
    assert "sk-or-secret" not in text and "pa-secret" not in text


def test_prompt_file_and_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    prompt = tmp_path / "extract_v9.txt"
    prompt.write_text("Extract.")
    monkeypatch.setenv("DREAMING_PROMPT_FILE", str(prompt))
    s = load_settings(dreaming_batch=3)
    assert s.dreaming_prompt_file == prompt and s.dreaming_batch == 3
