"""The beat schedule: built from DREAMING_TICK_SECS, or loaded from a TOML file in the format
of ``celerybeat-schedule.example`` when DREAMING_BEAT_SCHEDULE names one."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from celery.schedules import crontab

from eros.core.names import (
    CLAIM_TASK,
    CLUSTER_TASK,
    FIND_CONSOLIDATION_TASK,
    RETENTION_TASK,
    SCREEN_UNSCREENED_TASK,
)
from eros.errors import ConfigError
from eros.settings import Settings
from eros.tasks.args import InvalidArguments, validate


def default_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    """One claim every tick, one consolidation finder run every CONSOLIDATION_INTERVAL_SECS,
    one recall-cells finder run every RECALL_CELL_INTERVAL_SECS, one settling of unscreened
    memories every minute (or tick, if shorter) and, when a retention is
    set, one retention run every RETENTION_INTERVAL_SECS; a tick that could not be
    delivered in time expires, so an outage does not release a burst of claims when beat
    reconnects."""
    tick = float(settings.dreaming_tick_secs)
    schedule = {
        "claim-idle-sessions": {
            "task": CLAIM_TASK,
            "schedule": tick,
            "options": {"queue": settings.eros_claim_queue, "expires": tick},
        },
        # on the consolidate queue, off the claim queue (served with -c 1): a finder run
        # measuring a large backlog must never delay the claim of idle sessions
        "find-consolidation-candidates": {
            "task": FIND_CONSOLIDATION_TASK,
            "schedule": float(settings.consolidation_interval_secs),
            "options": {"queue": settings.eros_consolidate_queue,
                        "expires": float(settings.consolidation_interval_secs)},
        },
        # no argument: find the users due for recall cells and enqueue one task each
        "cluster-memories": {
            "task": CLUSTER_TASK,
            "schedule": float(settings.recall_cell_interval_secs),
            "options": {"queue": settings.eros_claim_queue,
                        "expires": float(settings.recall_cell_interval_secs)},
        },
    }
    # memories written while the guard's meaning layer had no model, judged once it has one
    # (one probe of an empty partial index when there are none)
    every_guard = float(min(60, settings.dreaming_tick_secs))
    schedule["screen-unscreened"] = {
        "task": SCREEN_UNSCREENED_TASK, "schedule": every_guard,
        "options": {"queue": settings.eros_consolidate_queue, "expires": every_guard}}
    # retention: only when MESSAGE_RETENTION_DAYS or HISTORY_RETENTION_DAYS is set
    if settings.message_retention_days or settings.history_retention_days:
        every = float(settings.retention_interval_secs)
        schedule["apply-retention"] = {
            "task": RETENTION_TASK, "schedule": every,
            "options": {"queue": settings.eros_consolidate_queue, "expires": every}}
    return schedule


def load_schedule(path: Path, settings: Settings) -> dict[str, dict[str, Any]]:
    """Parse a schedule file; every error names the file and the entry."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"DREAMING_BEAT_SCHEDULE: cannot read {path}: {err}") from None
    schedule: dict[str, dict[str, Any]] = {}
    for name, entry in document.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"DREAMING_BEAT_SCHEDULE: [{name}] must be a table")
        schedule[name] = _entry(name, entry, settings)
    return schedule


def _entry(name: str, entry: dict[str, Any], settings: Settings) -> dict[str, Any]:
    where = f"DREAMING_BEAT_SCHEDULE: [{name}]"
    task = entry.get("task")
    if not isinstance(task, str) or not task.startswith("eros."):
        raise ConfigError(f"{where}: 'task' must name an eros task, e.g. {CLAIM_TASK!r}")
    when: Any
    if "crontab" in entry:
        fields = str(entry["crontab"]).split()
        if len(fields) != 5:
            raise ConfigError(f"{where}: 'crontab' needs five fields (m h dom mon dow)")
        minute, hour, dom, month, dow = fields
        try:  # celery validates the fields here, with its own ValueError/KeyError
            when = crontab(minute=minute, hour=hour, day_of_month=dom, month_of_year=month,
                           day_of_week=dow)
        except (ValueError, KeyError) as err:
            raise ConfigError(f"{where}: 'crontab' {entry['crontab']!r} is invalid: {err}") \
                from None
    else:
        every = entry.get("every_secs", settings.dreaming_tick_secs)
        if not _positive_number(every):
            raise ConfigError(f"{where}: 'every_secs' must be a positive number")
        when = float(every)
    options: dict[str, Any] = {"queue": entry.get("queue", settings.eros_claim_queue)}
    expires = entry.get("expires_secs", when if isinstance(when, float) else None)
    if expires is not None:
        if not _positive_number(expires):
            raise ConfigError(f"{where}: 'expires_secs' must be a positive number")
        options["expires"] = float(expires)
    result: dict[str, Any] = {"task": task, "schedule": when, "options": options}
    if "kwargs" in entry:
        if not isinstance(entry["kwargs"], dict):
            raise ConfigError(f"{where}: 'kwargs' must be a table")
        result["kwargs"] = dict(entry["kwargs"])
    try:  # the worker would refuse every tick: say so at start-up instead
        validate(task, result.get("kwargs", {}))
    except InvalidArguments as err:
        raise ConfigError(f"{where}: {err}") from None
    return result


def _positive_number(value: object) -> bool:
    """TOML ``true`` is an int to Python; as an interval it is a typo, not one second."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    if settings.dreaming_beat_schedule is not None:
        return load_schedule(settings.dreaming_beat_schedule, settings)
    return default_schedule(settings)
