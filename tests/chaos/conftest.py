"""The chaos tier's one PostgreSQL and Redis, and its table printed after the run (also
without ``-s``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testkit.chaos.harness import Servers, table


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    """Started once for the tier (a cluster, the migrated template, the guard model trained
    for the fake Voyage server); every scenario still gets a fresh database and a flushed
    Redis from ``Servers.fresh_database``."""
    shared = Servers()
    yield shared
    shared.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.chaos.test_chaos import RESULTS

    if RESULTS:
        terminalreporter.section("chaos scenarios")
        terminalreporter.write_line(table(RESULTS))
