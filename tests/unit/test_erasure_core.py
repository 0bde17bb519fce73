"""Erasure without I/O (issue 26): the scopes and labels the schema's checks are built from,
the error code a failed erasure records, and the retention settings."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from eros.core.erasure import SCOPES, STATUSES, error_code
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.errors import ConfigError
from eros.settings import Settings, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    yield


def test_the_contract_values() -> None:
    assert SCOPES == ("user", "persona", "memory", "sensitive", "message", "session")
    assert STATUSES == ("done", "failed")
    assert SENSITIVITY_LABELS == ("health", "crisis", "sexuality", "beliefs", "ethnicity",
                                  "biometric")


def test_an_error_code_is_a_sqlstate_or_a_class_never_the_message() -> None:
    class Cancelled(psycopg.errors.QueryCanceled):
        pass
    secret = "Lives at zqxsecret street"
    assert error_code(ValueError(secret)) == "ValueError"
    wrapped = OperationalError("UPDATE … " + secret, {"x": secret},
                               psycopg.OperationalError(secret))
    assert error_code(wrapped) == "OperationalError"
    assert psycopg.errors.QueryCanceled.sqlstate == "57014"
    assert error_code(OperationalError("s", {}, Cancelled(secret))) == "57014"


def test_retention_is_off_by_default_and_must_not_be_negative(
        monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_settings()
    assert (s.message_retention_days, s.history_retention_days, s.retention_interval_secs) \
        == (0, 0, 3600)
    monkeypatch.setenv("MESSAGE_RETENTION_DAYS", "-1")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "MESSAGE_RETENTION_DAYS" in str(info.value)
    monkeypatch.setenv("MESSAGE_RETENTION_DAYS", "30")
    monkeypatch.setenv("HISTORY_RETENTION_DAYS", "90")
    s = load_settings()
    assert (s.message_retention_days, s.history_retention_days) == (30, 90)
