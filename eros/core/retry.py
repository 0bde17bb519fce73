"""Retry policy as a value, with a pure backoff function.

The Celery task maps a :class:`RetryDecision` onto ``Task.retry(countdown=...)``; the database
attempt counter (not Celery's in-message counter, which a redelivery resets) enforces the cap.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, bounded, honouring ``Retry-After``."""

    base_secs: float = 5.0
    max_secs: float = 240.0
    max_attempts: int = 5


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    countdown: float = 0.0
    reason: str = ""


def compute_backoff(attempt: int, *, base: float, cap: float,
                    retry_after: float | None = None, rng: random.Random | None = None) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (``attempt`` starts at 1).

    Full jitter over ``base · 2^(attempt-1)`` capped at ``cap``; a provider's ``Retry-After``
    is a floor (we never come back sooner than asked) but still capped, so a countdown always
    fits inside the claim-stale window and the broker's visibility timeout.
    """
    uniform = rng.uniform if rng is not None else random.uniform
    # The exponent is capped so a large attempt number cannot overflow float (2**1024).
    ceiling = min(cap, base * (2 ** min(max(0, attempt - 1), 64)))
    delay = uniform(ceiling / 2, ceiling)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, retry_after)
    return round(min(delay, cap), 3)


def decide(policy: RetryPolicy, attempt: int, retry_after: float | None = None,
           rng: random.Random | None = None) -> RetryDecision:
    """Retry while attempts remain; otherwise the caller dead-letters the session."""
    if attempt >= policy.max_attempts:
        return RetryDecision(False, 0.0, f"gave up after {attempt} attempts")
    countdown = compute_backoff(attempt, base=policy.base_secs, cap=policy.max_secs,
                                retry_after=retry_after, rng=rng)
    return RetryDecision(True, countdown, f"attempt {attempt} of {policy.max_attempts}")


#: SQLSTATE classes worth retrying: the connection failed (08xxx).
TRANSIENT_SQLSTATE_CLASSES = frozenset({"08"})
#: SQLSTATEs worth retrying: the transaction lost a race (serialization failure, deadlock, lock
#: timeout) or the server is going away, starting up or out of room for us.
TRANSIENT_SQLSTATES = frozenset({
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "55P03",  # lock_not_available (lock_timeout)
    "57P01",  # admin_shutdown
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now
    "53200",  # out_of_memory
    "53300",  # too_many_connections
})


def is_transient_sqlstate(code: str | None) -> bool:
    """Whether a statement that failed with SQLSTATE ``code`` may succeed if run again later;
    integrity, syntax and data errors never will."""
    if not code:
        return False
    return code in TRANSIENT_SQLSTATES or code[:2] in TRANSIENT_SQLSTATE_CLASSES


#: what a database without eros's schema answers: the table or the schema is not there
#: (undefined_table, invalid_schema_name)
UNMIGRATED_SQLSTATES: Final = frozenset({"42P01", "3F000"})


def sqlstate(err: BaseException) -> str | None:
    """The server's SQLSTATE of a failed statement (on the driver's error that SQLAlchemy
    wraps, or on that error itself), None when the server never answered."""
    code = getattr(getattr(err, "orig", None), "sqlstate", None) or getattr(err, "sqlstate", None)
    return code if isinstance(code, str) and code else None
