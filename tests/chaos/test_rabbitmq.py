"""The chaos drain with RabbitMQ as the broker (BROKER_URL=amqp://…, quorum queues, publisher
confirms), against the machine's RabbitMQ in a vhost of its own: 1,000 sessions, RabbitMQ
restarted mid-drain (``stop_app``/``start_app``) and then a worker SIGKILLed. Every session
must be classified exactly once — none dead-lettered, no duplicate memory, no claim stuck.
Skipped, with the reason, where 127.0.0.1:5672 does not answer."""

from __future__ import annotations

import pytest

from tests.chaos.harness import Servers, run
from tests.chaos.rabbit import RabbitVhost, unavailable_reason
from tests.chaos.scenarios import broker_restart_sigkill
from tests.chaos.test_chaos import RESULTS

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

EROS_QUEUES = ("eros.claim", "eros.classify", "eros.consolidate", "eros.recall")


def test_rabbitmq_restart_and_sigkill_classify_every_session_once() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    servers = Servers()
    rabbit = RabbitVhost("eros-chaos")
    try:
        result = run("rabbitmq-restart-sigkill", broker_restart_sigkill, servers,
                     sessions=1000, workers=3, rabbit=rabbit)
        queues = rabbit.queues()
    finally:
        rabbit.close()
        servers.close()
    RESULTS.append(result)
    # the disruptions really happened, against RabbitMQ
    assert any(e.startswith("rabbitmq restarted") for e in result.events), result
    assert any(e.startswith("SIGKILL") for e in result.events), result
    # the eros queues were declared as quorum queues (they survive the restart)
    assert {q: queues[q]["type"] for q in EROS_QUEUES if q in queues} == {
        q: "quorum" for q in EROS_QUEUES if q in queues}, queues
    assert "eros.classify" in queues and "eros.claim" in queues, queues
    # every session classified exactly once: none lost, none dead-lettered, nothing twice
    assert result.classified == result.sessions, result
    assert result.dead_lettered == 0, result
    assert result.lost == result.duplicates == result.wrong == result.twice == 0, result
    assert result.stuck == 0, result
