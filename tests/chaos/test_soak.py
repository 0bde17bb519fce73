"""The soak (issue 16): every committed user turn extracted exactly once while a product keeps
writing, 3 workers and 2 beats classify with a 2 s idle threshold and PostgreSQL restarts."""

from __future__ import annotations

import pytest

from testkit.chaos.harness import Servers
from tests.chaos.soak import soak

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]


def test_soak_loses_and_duplicates_no_turn(servers: Servers,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    result = soak(servers)
    with capsys.disabled():
        print(f"\nsoak: {result}")
    assert "postgres restarted" in result.events
    assert result.user_turns > result.sessions  # the product really wrote
    # every session's last turn arrived while a worker held its claim
    assert result.last_turns_during_claim == result.sessions, result
    assert result.unfinished == 0, result
    assert result.lost == 0, result
    assert result.duplicates == 0, result
