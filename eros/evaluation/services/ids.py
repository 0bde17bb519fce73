"""The ids a replayed suite gets: its users and sessions as UUIDs, and the persona every
session is said to."""

from __future__ import annotations

import uuid

from eros.evaluation.core.suite import Suite

_NS = uuid.UUID("9a1d4c57-7f0e-4f4b-b0f6-4e2e2a8e5a19")


def as_uuid(value: str) -> uuid.UUID:
    """Suite ids are UUIDs when they can be; anything else maps to a stable one."""
    try:
        return uuid.UUID(value)
    except ValueError:
        return uuid.uuid5(_NS, value)


def persona_of(suite: Suite) -> uuid.UUID:
    """The persona every replayed session of ``suite`` is said to."""
    return uuid.uuid5(_NS, f"persona/{suite.name}")
