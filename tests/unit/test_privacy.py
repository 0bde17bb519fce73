"""Log privacy and secrets, pure: Celery's task lines lose their arguments and return value in
both formats; the settings' repr carries no URL password or API key."""

from __future__ import annotations

import logging

from eros.ops.logs import JsonFormatter, PrivacyFilter
from eros.settings import load_settings

SECRET = "zqxsecret1234"


def _celery_record(fmt: str, context: dict[str, object]) -> logging.LogRecord:
    record = logging.LogRecord("celery.app.trace", logging.INFO, __file__, 1, fmt, (context,),
                               None)
    record.args = context  # what logging does with a single dict argument
    record.data = context
    return record


def test_celery_lines_lose_args_and_return_value_in_both_formats() -> None:
    succeeded = _celery_record("Task %(name)s[%(id)s] succeeded in %(runtime)ss: "
                               "%(return_value)s", {
                                   "id": "t1", "name": "eros.recall", "runtime": 0.1,
                                   "return_value": f"{{'prompt': '{SECRET}'}}",
                                   "args": f"['u', '{SECRET}']", "kwargs": "{}"})
    received = _celery_record("Task %(name)s[%(id)s] received", {
        "id": "t2", "name": "eros.recall", "args": f"['u', '{SECRET}']", "kwargs": "{}",
        "eta": None})
    for record in (succeeded, received):
        assert PrivacyFilter().filter(record)
        for formatter in (JsonFormatter(), logging.Formatter("%(levelname)s %(message)s")):
            line = formatter.format(record)
            assert SECRET not in line and "eros.recall" in line
    assert "<hidden>" in succeeded.getMessage()


def test_other_records_pass_unchanged() -> None:
    record = logging.LogRecord("eros", logging.INFO, __file__, 1, "%s memories", (3,), None)
    assert PrivacyFilter().filter(record) and record.getMessage() == "3 memories"


def test_settings_repr_has_no_password_or_key() -> None:
    settings = load_settings(database_url=f"postgresql://u:{SECRET}@h/db",
                             redis_url=f"redis://:{SECRET}@h:1/0",
                             openrouter_api_key=SECRET, voyage_api_key=SECRET)
    assert SECRET not in repr(settings) and SECRET not in str(settings)
