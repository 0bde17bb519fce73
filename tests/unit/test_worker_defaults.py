"""`eros run` starts its workers as the Procfile's entries do (the Procfile is the contract):
the classify worker's pool, concurrency default, node name and queue, and the other worker under
Celery's default node name, so ``eros health --worker`` names the same node either way."""

from __future__ import annotations

import re
import shlex

from eros.devstack.workers import CLASSIFY_CONCURRENCY, CLASSIFY_HOSTNAME, worker_commands
from eros.settings import Settings
from testkit.services import ROOT


def _procfile() -> dict[str, list[str]]:
    entries = {}
    for line in (ROOT / "Procfile").read_text(encoding="utf-8").splitlines():
        name, _, command = line.partition(":")
        entries[name.strip()] = shlex.split(command)
    return entries


def _option(words: list[str], name: str) -> str | None:
    found = [w.split("=", 1)[1] for w in words if w.startswith(f"--{name}=")]
    assert len(found) <= 1, words
    return found[0] if found else None


def _default(value: str | None, variable: str) -> str:
    """``${VARIABLE:-default}`` -> ``default``."""
    assert value is not None
    match = re.fullmatch(rf"\$\{{{variable}:-([^}}]+)\}}", value)
    assert match, value
    return match.group(1)


def test_the_classify_worker_is_started_as_the_procfile_starts_it() -> None:
    settings = Settings()
    procfile = _procfile()["classify"]
    started = dict(worker_commands(settings, concurrency=None, loglevel="INFO",
                                   demo=False))["classify"]
    assert _default(_option(procfile, "concurrency"), "CLASSIFY_CONCURRENCY") \
        == str(CLASSIFY_CONCURRENCY) == _option(started, "concurrency")
    assert _option(procfile, "hostname") == CLASSIFY_HOSTNAME == _option(started, "hostname")
    assert _option(procfile, "pool") == "gevent" == _option(started, "pool")
    assert _default(_option(procfile, "queues"), "EROS_CLASSIFY_QUEUE") \
        == settings.eros_classify_queue == _option(started, "queues")


def test_the_other_worker_keeps_celerys_default_node_name() -> None:
    assert _option(_procfile()["worker"], "hostname") is None
    for demo in (False, True):
        for _, words in worker_commands(Settings(), concurrency=2, loglevel="INFO", demo=demo):
            if _option(words, "pool") != "gevent":
                assert _option(words, "hostname") is None, words
