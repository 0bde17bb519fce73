"""The disruptions, each a function run beside the drain until it is told to stop."""

from __future__ import annotations

import random
import threading
import time

from testkit.chaos.harness import Disruption, Stack
from testkit.fakes import Fault


def wait_for_progress(stack: Stack, stop: threading.Event, done: int) -> bool:
    """Let the drain get going (``done`` sessions finished) so a disruption hits mid-drain."""
    total = None
    while not stop.is_set():
        left = stack.unfinished()
        if left >= 0:
            total = total if total is not None else left
            if total - left >= done:
                return True
        stop.wait(0.2)
    return False


def sigkill_repeatedly(stack: Stack, stop: threading.Event) -> None:
    """SIGKILL a random worker (pool and all) every few seconds and start a replacement."""
    rng = random.Random(5)
    wait_for_progress(stack, stop, 50)
    kills = 0
    while not stop.is_set() and kills < 4:
        victim = rng.choice(stack.live_workers())
        victim.kill()
        kills += 1
        stack.events.append(f"SIGKILL {victim.name}")
        stack.start_worker()
        stop.wait(3.0)


def sigterm_warm_shutdown(stack: Stack, stop: threading.Event) -> None:
    """SIGTERM one worker: it finishes what it runs, then leaves; a replacement comes up."""
    wait_for_progress(stack, stop, 100)
    victim = stack.live_workers()[0]
    victim.terminate(timeout=60)
    stack.events.append(f"SIGTERM {victim.name} exit={victim.proc.returncode}")
    stack.start_worker()


def redis_restart(stack: Stack, stop: threading.Event) -> None:
    """Restart the broker mid-drain; it keeps nothing, so every queued message is lost."""
    wait_for_progress(stack, stop, 150)
    stack.redis.restart(downtime=2.0)
    stack.events.append("redis restarted (queue lost)")


def sigkill_one(stack: Stack) -> None:
    victim = random.Random(7).choice(stack.live_workers())
    victim.kill()
    stack.events.append(f"SIGKILL {victim.name}")
    stack.start_worker()


def broker_restart_sigkill(stack: Stack, stop: threading.Event) -> None:
    """A worker SIGKILLed mid-drain, then the broker restarted while its messages are handed
    out again: RabbitMQ (``rabbit`` set) keeps its quorum queues and redelivers the killed
    worker's unacked messages; Redis (no persistence) loses its queue, and the stale-claim
    rescue re-claims those sessions. The kill comes first: it is instant, while each
    rabbitmqctl call of the restart boots an Erlang VM (12–30 s on a slow, loaded machine —
    a kill that waited for the restart came after the drain had ended)."""
    if not wait_for_progress(stack, stop, 100):
        return
    sigkill_one(stack)
    began = time.monotonic()
    if stack.rabbit is not None:
        stack.rabbit.restart(downtime=2.0)
        what = "rabbitmq restarted (stop_app/start_app"
    else:
        stack.redis.restart(downtime=2.0)
        what = "redis restarted (queue lost"
    stack.events.append(f"{what}, down {time.monotonic() - began:.1f}s)")


def postgres_restart(stack: Stack, stop: threading.Event) -> None:
    """Stop PostgreSQL (fast: connections cut) for a few seconds mid-drain."""
    wait_for_progress(stack, stop, 150)
    stack.pg.restart(downtime=3.0)
    stack.events.append("postgres restarted")


def llm_outage(stack: Stack, stop: threading.Event) -> None:
    """The LLM answers 503 to everything for a while, then recovers."""
    wait_for_progress(stack, stop, 100)
    stack.llm.set_down(True)
    stack.events.append("llm down")
    stop.wait(8.0)
    stack.llm.set_down(False)
    stack.events.append("llm up")


def llm_429_bursts(stack: Stack, stop: threading.Event) -> None:
    """Bursts of 429 with Retry-After."""
    wait_for_progress(stack, stop, 50)
    for _ in range(3):
        if stop.is_set():
            return
        stack.llm.script([Fault.status(429, retry_after=1)] * 40)
        stack.events.append("429 x40")
        stop.wait(3.0)


def embedding_500s(stack: Stack, stop: threading.Event) -> None:
    """The embedding server fails a third of its requests with 500."""
    stack.voyage.fail_rate(0.33, 500, seed=3)
    stack.events.append("voyage 500 at 33%")
    stop.wait(10_000)
    stack.voyage.fail_rate(0.0, 500)


def two_beats(stack: Stack, stop: threading.Event) -> None:
    """A second beat process runs the same schedule."""
    stack.start_beat()
    stack.events.append("second beat")


def none(stack: Stack, stop: threading.Event) -> None:
    """Baseline: nothing breaks."""


SCENARIOS: dict[str, Disruption] = {
    "baseline": none,
    "sigkill": sigkill_repeatedly,
    "sigterm": sigterm_warm_shutdown,
    "redis-restart": redis_restart,
    "postgres-restart": postgres_restart,
    "llm-outage": llm_outage,
    "llm-429-bursts": llm_429_bursts,
    "embedding-500s": embedding_500s,
    "two-beats": two_beats,
    "broker-restart-sigkill": broker_restart_sigkill,
}
