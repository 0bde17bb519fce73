"""``eros eval``'s progress as plain lines (stderr not a terminal), with a fake clock."""

from __future__ import annotations

from eros.evaluation.services.progress import lines


def test_lines_at_most_every_interval_and_once_at_the_end() -> None:
    now = [0.0]
    out: list[str] = []
    progress = lines(out.append, every_secs=10, clock=lambda: now[0])
    with progress("ask", 100) as advance:
        for _ in range(50):  # 50 questions over 25 s: lines at 10 s and 20 s only
            now[0] += 0.5
            advance(1)
    assert out == ["eval: ask 20/100 (20%), 0:10 elapsed, ~0:40 left",
                   "eval: ask 40/100 (40%), 0:20 elapsed, ~0:30 left",
                   "eval: ask 50/100 (50%), 0:25 elapsed, ~0:25 left"]


def test_a_finished_phase_says_so_without_an_estimate() -> None:
    now = [0.0]
    out: list[str] = []
    with lines(out.append, clock=lambda: now[0])("classify", 3) as advance:
        now[0] = 75.0
        advance(3)
    assert out == ["eval: classify 3/3 (100%), 1:15 elapsed"]


def test_an_empty_phase_prints_one_line() -> None:
    out: list[str] = []
    with lines(out.append, clock=lambda: 0.0)("consolidate", 0):
        pass
    assert out == ["eval: consolidate 0/0, 0:00 elapsed"]
