"""Print the chaos table after the run (also without ``-s``)."""

from __future__ import annotations

from typing import Any

from tests.chaos.harness import table


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.chaos.test_chaos import RESULTS

    if RESULTS:
        terminalreporter.section("chaos scenarios")
        terminalreporter.write_line(table(RESULTS))
