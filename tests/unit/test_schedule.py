"""The beat schedule: ticks expire after one interval (an outage must not release a burst of
claims when beat reconnects) and go to the claim queue (a classify backlog never delays them).
Ops edit the schedule file by hand, so each mistake must name DREAMING_BEAT_SCHEDULE and the
entry at start-up rather than surface later inside Celery."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.schedules import crontab

from eros.core.names import CLAIM_TASK
from eros.errors import ConfigError
from eros.settings import Settings, load_settings
from eros.tasks.schedule import beat_schedule, default_schedule, load_schedule

EXAMPLE = Path(__file__).resolve().parents[2] / "celerybeat-schedule.example"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    yield


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "schedule.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_default_schedule_expires_after_one_tick_on_the_claim_queue() -> None:
    schedule = default_schedule(load_settings(dreaming_tick_secs=120))
    assert schedule["claim-idle-sessions"] == {
        "task": CLAIM_TASK, "schedule": 120.0,
        "options": {"queue": "eros.claim", "expires": 120.0}}


def test_default_follows_the_configured_queue() -> None:
    entry = default_schedule(load_settings(eros_claim_queue="claims"))["claim-idle-sessions"]
    assert entry["options"]["queue"] == "claims" and entry["schedule"] == 300.0


def test_shipped_example_loads() -> None:
    schedule = load_schedule(EXAMPLE, load_settings())
    entry = schedule["claim-idle-sessions"]
    assert entry["task"] == CLAIM_TASK
    assert entry["schedule"] == 300.0
    assert entry["options"] == {"queue": "eros.claim", "expires": 300.0}


def test_beat_schedule_uses_the_file_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DREAMING_BEAT_SCHEDULE", str(EXAMPLE))
    assert beat_schedule(load_settings()) == load_schedule(EXAMPLE, load_settings())
    monkeypatch.delenv("DREAMING_BEAT_SCHEDULE")
    assert beat_schedule(load_settings()) == default_schedule(load_settings())


def test_defaults_inside_an_entry(tmp_path: Path) -> None:
    path = write(tmp_path, '[tick]\ntask = "eros.claim_idle_sessions"\n'
                           "kwargs = { batch = 50 }\n")
    entry = load_schedule(path, load_settings(dreaming_tick_secs=60))["tick"]
    assert entry == {"task": CLAIM_TASK, "schedule": 60.0, "kwargs": {"batch": 50},
                     "options": {"queue": "eros.claim", "expires": 60.0}}


def test_crontab_entry(tmp_path: Path) -> None:
    path = write(tmp_path, '[nightly]\ntask = "eros.claim_idle_sessions"\n'
                           'crontab = "*/15 2-5 * * *"\nexpires_secs = 600\nqueue = "slow"\n')
    entry = load_schedule(path, load_settings())["nightly"]
    assert entry["schedule"] == crontab(minute="*/15", hour="2-5")
    assert entry["options"] == {"queue": "slow", "expires": 600.0}


def test_crontab_entry_without_expiry(tmp_path: Path) -> None:
    path = write(tmp_path, '[n]\ntask = "eros.claim_idle_sessions"\ncrontab = "0 * * * *"\n')
    assert "expires" not in load_schedule(path, load_settings())["n"]["options"]


@pytest.mark.parametrize(("text", "fragment"), [
    ('[tick]\ntask = "celery.backend_cleanup"\n', "'task'"),
    ("[tick]\nevery_secs = 5\n", "'task'"),
    ('[tick]\ntask = 5\n', "'task'"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\nevery_secs = -5\n', "every_secs"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\nevery_secs = "5m"\n', "every_secs"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\nevery_secs = true\n', "every_secs"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\nexpires_secs = 0\n', "expires_secs"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\nexpires_secs = false\n', "expires_secs"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\ncrontab = "* * *"\n', "crontab"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\ncrontab = "99 * * * *"\n', "crontab"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\ncrontab = "0 0 * * funday"\n', "crontab"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\nkwargs = 3\n', "kwargs"),
    # issue 32: the worker would refuse every tick of these
    ('[tick]\ntask = "eros.claim_idle_sessions"\nkwargs = { batch = "50" }\n', "batch"),
    ('[tick]\ntask = "eros.claim_idle_sessions"\nkwargs = { size = 50 }\n', "size"),
    ('[tick]\ntask = "eros.no_such_task"\n', "no argument model"),
    ("tick = 300\n", "must be a table"),
])
def test_bad_entries_name_the_variable_and_the_entry(tmp_path: Path, text: str,
                                                     fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_schedule(write(tmp_path, text), load_settings())
    message = str(info.value)
    assert message.startswith("DREAMING_BEAT_SCHEDULE: [tick]")
    assert fragment in message


def test_only_the_bad_entry_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, '[good]\ntask = "eros.claim_idle_sessions"\n'
                           '[bad]\ntask = "eros.claim_idle_sessions"\nevery_secs = 0\n')
    with pytest.raises(ConfigError, match=r"\[bad\]"):
        load_schedule(path, load_settings())


def test_unreadable_files_name_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="DREAMING_BEAT_SCHEDULE: cannot read"):
        load_schedule(tmp_path / "missing.toml", load_settings())
    with pytest.raises(ConfigError, match=r"DREAMING_BEAT_SCHEDULE: cannot read .*schedule\.toml"):
        load_schedule(write(tmp_path, "[tick\ntask = 1"), load_settings())


def test_missing_file_in_the_variable_fails_at_start_up(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    monkeypatch.setenv("DREAMING_BEAT_SCHEDULE", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="DREAMING_BEAT_SCHEDULE"):
        beat_schedule(load_settings())
