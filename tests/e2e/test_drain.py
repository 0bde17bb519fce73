"""Real celery worker and beat processes drain idle sessions through the fake provider APIs."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import Engine, text

from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, FakeVoyageServer, Fault
from testkit.workers import BeatProcess, wait_until
from tests.e2e.conftest import Starter

pytestmark = pytest.mark.e2e
CATEGORIES = ("fact", "preference", "event", "emotion", "relation")


def _seed(engine: Engine, count: int, rng: random.Random) -> dict[uuid.UUID, set[tuple[str, str]]]:
    """Sessions with 0–3 scripted memories each, plus persona lines that must be ignored."""
    expected: dict[uuid.UUID, set[tuple[str, str]]] = {}
    with engine.begin() as conn:
        for n in range(count):
            mems = {(f"memory {n}.{i} {uuid.uuid4().hex[:6]}", rng.choice(CATEGORIES))
                    for i in range(rng.randint(0, 3))}
            turns = [mem_line(cat, 0.5, content) for content, cat in sorted(mems)]
            turns.insert(0, ("assistant", f"MEM fact 0.9 persona line {n}"))
            turns.append(("user", "thanks, good night"))
            sid = add_session(conn, turns)
            expected[sid] = mems
    return expected


def _written(engine: Engine) -> dict[uuid.UUID, list[tuple[str, str]]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT session_id, content, category"
                                 " FROM engine.companion_memories")).all()
    out: dict[uuid.UUID, list[tuple[str, str]]] = {}
    for r in rows:
        out.setdefault(r.session_id, []).append((r.content, r.category))
    return out


def _unfinished(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT count(*) FROM engine.chat_sessions"
            " WHERE classified_at IS NULL AND dead_lettered_at IS NULL")).scalar_one())


def _assert_exact(engine: Engine, expected: dict[uuid.UUID, set[tuple[str, str]]]) -> None:
    written = _written(engine)
    for sid, mems in expected.items():
        got = written.get(sid, [])
        assert len(got) == len(set(got)), f"duplicate memories for {sid}"
        assert set(got) == mems, f"session {sid}: {got} != {mems}"
    assert set(written) <= set(expected)
    with engine.connect() as conn:
        stuck = conn.execute(text("SELECT count(*) FROM engine.chat_sessions"
                                  " WHERE claim_token IS NOT NULL")).scalar_one()
    assert stuck == 0


def test_200_idle_sessions_drain_to_exactly_the_expected_memories(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        voyage: FakeVoyageServer, llm: FakeLLMServer) -> None:
    expected = _seed(engine, 200, random.Random(7))
    start_worker("w1", concurrency=4)
    start_worker("w2", concurrency=4)
    start_beat()
    wait_until(lambda: _unfinished(engine) == 0, timeout=180, message="drain")
    _assert_exact(engine, expected)
    with_memories = sum(1 for m in expected.values() if m)
    # one embedding call per session: its candidates and its user turns (issue 31), which
    # every session has ("thanks, good night"), so even one without memories makes it
    assert voyage.request_count == 200
    with engine.connect() as conn:
        indexed = conn.execute(text("SELECT count(*) FROM engine.memory_turns")).scalar_one()
    assert indexed == sum(len(m) + 1 for m in expected.values())
    assert llm.request_count == 200
    with engine.connect() as conn:
        outcomes = dict(conn.execute(text("SELECT outcome, count(*) FROM engine.chat_sessions"
                                          " GROUP BY outcome")).all())
    assert outcomes == {k: v for k, v in {"memories": with_memories,
                                          "no_memories": 200 - with_memories}.items() if v}


def test_sigkill_mid_task_loses_nothing_and_duplicates_nothing(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        llm: FakeLLMServer) -> None:
    expected = _seed(engine, 30, random.Random(11))
    llm.set_latency(1.5)
    victim = start_worker("victim", concurrency=4)
    start_beat()
    wait_until(lambda: llm.request_count >= 4, timeout=60, message="tasks in flight")
    victim.kill()  # SIGKILL the whole worker mid-request: nothing acked, nothing cleaned up
    in_flight_at_kill = 30 - _unfinished(engine)
    assert _unfinished(engine) > 0
    llm.set_latency(0.0)
    start_worker("rescuer", concurrency=4)
    wait_until(lambda: _unfinished(engine) == 0, timeout=150, message="rescue after SIGKILL")
    _assert_exact(engine, expected)
    assert in_flight_at_kill < 30


def test_transient_faults_retry_with_backoff_then_succeed(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        llm: FakeLLMServer, voyage: FakeVoyageServer) -> None:
    expected = _seed(engine, 12, random.Random(3))
    llm.script([Fault.status(429, retry_after=1), Fault.status(502), Fault.drop()])
    voyage.script([Fault.status(500), Fault.status(503)])
    start_worker("w1", concurrency=2)
    start_beat()
    wait_until(lambda: _unfinished(engine) == 0, timeout=120, message="drain with faults")
    _assert_exact(engine, expected)
    with engine.connect() as conn:
        retries = conn.execute(text("SELECT count(*) FROM engine.classification_runs"
                                    " WHERE outcome = 'retrying'")).scalar_one()
    assert retries >= 4  # every fault became a recorded retry, not a loss


def test_permanently_failing_session_is_dead_lettered_not_retried_forever(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        llm: FakeLLMServer) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "never extracted")])
    llm.set_down(True)  # 503 to everything
    start_worker("w1", concurrency=2, DREAMING_MAX_ATTEMPTS="3")
    start_beat(DREAMING_MAX_ATTEMPTS="3")

    def dead() -> bool:
        with engine.connect() as conn:
            return conn.execute(text("SELECT dead_lettered_at IS NOT NULL FROM"
                                     " engine.chat_sessions WHERE id = :i"), {"i": sid}).scalar()
    wait_until(dead, timeout=90, message="dead letter")
    with engine.connect() as conn:
        row = conn.execute(text("SELECT outcome, last_error, classified_at, claim_token"
                                " FROM engine.chat_sessions WHERE id = :i"), {"i": sid}).one()
    assert row.outcome == "dead_letter" and "503" in row.last_error
    assert row.classified_at is None and row.claim_token is None
    assert llm.request_count == 3


def test_shell_call_takes_its_own_claim_and_skips_when_done(
        engine: Engine, start_worker: Starter, stack_env: dict[str, str],
        llm: FakeLLMServer) -> None:
    import subprocess
    import sys

    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "from the shell")])
    start_worker("w1", concurrency=1)

    def call(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "celery", "-A", "eros.worker", "call",
                        "eros.classify_session", "--args", f'["{sid}"]', *args],
                       env=stack_env, check=True, capture_output=True, timeout=60)

    call()
    wait_until(lambda: _unfinished(engine) == 0, timeout=60, message="shell classify")
    call()  # already classified: skipped, nothing new
    call("--kwargs", '{"force": true}')  # a developer's re-run: same extraction, no duplicate
    wait_until(lambda: _runs(engine, sid) >= 2, timeout=60, message="forced re-run")
    assert _written(engine)[sid] == [("from the shell", "fact")]
    assert llm.request_count == 2  # the skipped call made none; the forced one re-read it all


def _runs(engine: Engine, sid: uuid.UUID) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM engine.classification_runs"
                                     " WHERE session_id = :i"), {"i": sid}).scalar_one())


def test_permanent_provider_error_is_recorded_and_released_not_stamped(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        llm: FakeLLMServer) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "bad key")])
    llm.script([Fault.status(401)])
    start_worker("w1", concurrency=1)
    start_beat()

    def recorded() -> bool:
        with engine.connect() as conn:
            return conn.execute(text("SELECT outcome FROM engine.chat_sessions WHERE id = :i"),
                                {"i": sid}).scalar() == "permanent_error"
    wait_until(recorded, timeout=60, message="permanent error recorded")
    with engine.connect() as conn:
        row = conn.execute(text(
            "SELECT classified_at, claim_token, next_attempt_at > now() AS waiting, last_error"
            " FROM engine.chat_sessions WHERE id = :i"), {"i": sid}).one()
    assert row.classified_at is None and row.claim_token is None and row.waiting
    assert "401" in row.last_error
    assert llm.request_count == 1  # not retried in a loop
