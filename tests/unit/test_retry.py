"""Backoff and the retry decision: bounded, jittered, honouring Retry-After but never beyond the
cap, because a countdown longer than the claim-stale window would let a second worker take the
session while the first one is still due to retry it."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eros.core.retry import RetryPolicy, compute_backoff, decide

ROUNDING = 5e-4  # compute_backoff rounds to milliseconds


class Edge(random.Random):
    """An rng whose ``uniform`` always returns one end of the range."""

    def __init__(self, high: bool) -> None:
        super().__init__(0)
        self.high = high

    def uniform(self, a: float, b: float) -> float:
        return b if self.high else a


def ceiling(attempt: int, base: float, cap: float) -> float:
    return min(cap, base * 2 ** (attempt - 1))


def test_ceiling_doubles_then_caps() -> None:
    got = [compute_backoff(a, base=5, cap=240, rng=Edge(True)) for a in range(1, 10)]
    assert got == [5, 10, 20, 40, 80, 160, 240, 240, 240]


def test_ceiling_is_monotone() -> None:
    for rng_high in (True, False):
        got = [compute_backoff(a, base=1.5, cap=300, rng=Edge(rng_high)) for a in range(1, 40)]
        assert got == sorted(got)


@pytest.mark.parametrize("attempt", [1, 2, 3, 6, 12])
def test_jitter_within_half_to_full_ceiling(attempt: int) -> None:
    rng = random.Random(attempt)
    top = ceiling(attempt, 5, 240)
    samples = [compute_backoff(attempt, base=5, cap=240, rng=rng) for _ in range(500)]
    assert all(top / 2 - ROUNDING <= s <= top + ROUNDING for s in samples)
    assert max(samples) - min(samples) > top / 4  # actually jittered, not constant


def test_default_rng_is_used_without_one() -> None:
    assert 2.5 - ROUNDING <= compute_backoff(1, base=5, cap=240) <= 5 + ROUNDING


def test_retry_after_is_a_floor() -> None:
    assert compute_backoff(1, base=5, cap=240, retry_after=30, rng=Edge(True)) == 30
    # a short Retry-After does not shorten our own backoff
    assert compute_backoff(5, base=5, cap=240, retry_after=1, rng=Edge(True)) == 80


def test_retry_after_is_capped() -> None:
    assert compute_backoff(1, base=5, cap=240, retry_after=3600) == 240
    assert compute_backoff(1, base=5, cap=240, retry_after=float("inf")) == 240


@pytest.mark.parametrize("retry_after", [None, 0, -10, float("nan")])
def test_meaningless_retry_after_ignored(retry_after: float | None) -> None:
    got = compute_backoff(3, base=5, cap=240, retry_after=retry_after, rng=Edge(False))
    assert got == 10


def test_huge_attempt_numbers_do_not_overflow() -> None:
    assert compute_backoff(5000, base=5.0, cap=240.0, rng=Edge(True)) == 240


@settings(max_examples=400, deadline=None)
@given(attempt=st.integers(-5, 100_000), base=st.floats(0.001, 1000),
       cap=st.floats(0.001, 3600),
       retry_after=st.none() | st.floats(allow_nan=True, allow_infinity=True),
       seed=st.integers(0, 2**32))
def test_countdown_always_within_zero_and_cap(attempt: int, base: float, cap: float,
                                              retry_after: float | None, seed: int) -> None:
    got = compute_backoff(attempt, base=base, cap=cap, retry_after=retry_after,
                          rng=random.Random(seed))
    assert 0 <= got <= cap + ROUNDING


def test_decide_retries_until_max_attempts() -> None:
    policy = RetryPolicy(base_secs=5, max_secs=240, max_attempts=4)
    decisions = [decide(policy, a, rng=Edge(True)) for a in range(1, 7)]
    assert [d.retry for d in decisions] == [True, True, True, False, False, False]
    assert [d.countdown for d in decisions[:3]] == [5, 10, 20]
    assert decisions[0].reason == "attempt 1 of 4"
    assert decisions[3].countdown == 0 and "gave up after 4 attempts" in decisions[3].reason


def test_decide_honours_retry_after_and_cap() -> None:
    policy = RetryPolicy(base_secs=5, max_secs=60, max_attempts=5)
    assert decide(policy, 1, retry_after=45, rng=Edge(False)).countdown == 45
    assert decide(policy, 1, retry_after=600).countdown == 60


def test_single_attempt_policy_never_retries() -> None:
    assert not decide(RetryPolicy(max_attempts=1), 1).retry


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 100), st.integers(1, 100), st.none() | st.floats(0, 1e6))
def test_decide_countdown_within_cap(max_attempts: int, attempt: int,
                                     retry_after: float | None) -> None:
    policy = RetryPolicy(base_secs=5, max_secs=240, max_attempts=max_attempts)
    d = decide(policy, attempt, retry_after)
    assert d.retry == (attempt < max_attempts)
    assert 0 <= d.countdown <= policy.max_secs
