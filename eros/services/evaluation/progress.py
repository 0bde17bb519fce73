"""Progress of an ``eros eval`` run, one bar per phase (the CLI draws them on stderr)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

#: ``progress(phase, total)`` → a context giving ``advance(steps)``
Progress = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]


@contextmanager
def silent(phase: str, total: int) -> Iterator[Callable[[int], None]]:
    """No bars (the library default)."""
    yield lambda steps: None
