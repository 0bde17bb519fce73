"""Progress of an ``eros eval`` run, one bar per phase (the CLI draws them on stderr; plain
lines when stderr is not a terminal)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

#: ``progress(phase, total)`` → a context giving ``advance(steps)``
Progress = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]


@contextmanager
def silent(phase: str, total: int) -> Iterator[Callable[[int], None]]:
    """No bars (the library default)."""
    yield lambda steps: None


def lines(write: Callable[[str], None], *, every_secs: float = 15.0,
          clock: Callable[[], float] = time.monotonic) -> Progress:
    """Progress as plain lines (stderr not a terminal: a log, CI, ``nohup``): a phase's count,
    share, elapsed time and a linear estimate of what is left, at most every ``every_secs``
    and once when the phase ends — a full LoCoMo run asks ~2,000 questions, and a log with
    nothing in it for minutes cannot be told from a hung run."""

    @contextmanager
    def phase_lines(phase: str, total: int) -> Iterator[Callable[[int], None]]:
        started = last = clock()
        done = 0

        def say(now: float) -> None:
            elapsed = now - started
            left = elapsed / done * (total - done) if done else 0.0
            share = f" ({100 * done / total:.0f}%)" if total else ""
            write(f"eval: {phase} {done}/{total}{share}, {_clock(elapsed)} elapsed"
                  + (f", ~{_clock(left)} left" if done < total else ""))

        def advance(steps: int) -> None:
            nonlocal done, last
            done += steps
            now = clock()
            if now - last >= every_secs and done < total:
                last = now
                say(now)

        yield advance
        say(clock())
    return phase_lines


def _clock(secs: float) -> str:
    minutes, seconds = divmod(int(secs), 60)
    return f"{minutes}:{seconds:02d}"
