"""build_transcript: an oversized session is trimmed on purpose (newest turns kept) so it is never
sent over the model's context — the reference sent whole transcripts and dead-looped on them.

The size bound, derived from the code: the text is the header, ``---``, an optional trim note
and the kept lines joined by newlines. Kept lines (each plus its newline) fit in
``room = max(budget - len(header) - 200, 100)``, except a single newest turn that alone exceeds
``room``, which is cut to exactly ``room`` characters. So

    len(text) <= len(header) + 4 + note + room + 1,   note = 1 + len(trim note) or 0

which is at most ``budget - 171 + digits(trimmed)`` whenever ``budget >= len(header) + 300``,
in particular for every budget Settings allows (DREAMING_TRANSCRIPT_BUDGET_CHARS >= 500). Below
about 350 characters the 100-character floor on ``room`` lets the text exceed the budget; that
is asserted separately so a change to it is seen.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from eros.core.transcript import Transcript, Turn, build_transcript

T0 = datetime(2026, 3, 7, 21, 30, tzinfo=UTC)  # a Saturday


def turns(*pairs: tuple[str, str], start: datetime = T0) -> list[Turn]:
    return [Turn(role, content, start + timedelta(minutes=i), seq=i + 1)
            for i, (role, content) in enumerate(pairs)]


def body(t: Transcript) -> list[str]:
    """The turn lines (after the header, the separator and any trim note)."""
    lines = t.text.split("\n")
    assert lines[1] == "---"
    rest = lines[2:]
    return rest[1:] if rest and rest[0].endswith("earlier turns omitted]") else rest


def header_len(t: Transcript) -> int:
    return len(t.text.split("\n", 1)[0])


def bound(t: Transcript, budget: int) -> int:
    """The tight upper bound on len(t.text) derived in the module docstring."""
    h = header_len(t)
    room = max(budget - h - 200, 100)
    note = 1 + len(f"[{t.turns_trimmed} earlier turns omitted]") if t.turns_trimmed else 0
    return h + 4 + note + room + 1


def test_small_session_kept_whole_with_dated_header() -> None:
    t = build_transcript(turns(("user", "hi"), ("assistant", "hello"), ("user", "bye")),
                         budget_chars=10_000)
    assert t.text.split("\n") == ["Session date: 2026-03-07 (Saturday)", "---", "user: hi",
                                  "assistant: hello", "user: bye"]
    assert (t.turns_kept, t.turns_trimmed, t.first_seq, t.last_seq) == (3, 0, 1, 3)


def test_date_range_header_when_session_spans_days() -> None:
    later = Turn("user", "next day", T0 + timedelta(days=2), seq=9)
    t = build_transcript([*turns(("user", "late")), later], budget_chars=10_000)
    assert t.text.startswith("Session dates: 2026-03-07 to 2026-03-09 (Monday)\n---\n")


def test_newest_turns_kept_oldest_trimmed_with_note() -> None:
    many = turns(*[("user" if i % 2 == 0 else "assistant", f"turn {i:03d} " + "x" * 80)
                   for i in range(100)])
    t = build_transcript(many, budget_chars=2_000)
    assert 0 < t.turns_kept < 100 and t.turns_kept + t.turns_trimmed == 100
    lines = t.text.split("\n")
    assert lines[2] == f"[{t.turns_trimmed} earlier turns omitted]"
    kept = body(t)
    assert kept[-1].startswith("assistant: turn 099")
    assert kept[0].split()[2] == f"{100 - t.turns_kept:03d}"  # a contiguous newest suffix
    assert len(t.text) <= 2_000
    assert (t.first_seq, t.last_seq) == (1, 100)


def test_single_giant_turn_is_cut() -> None:
    t = build_transcript(turns(("user", "y" * 100_000)), budget_chars=1_000)
    (line,) = body(t)
    assert line.startswith("user: yyy") and line.endswith(" …")
    assert t.turns_kept == 1 and t.turns_trimmed == 0
    assert len(t.text) <= 1_000


def test_giant_newest_turn_after_older_ones() -> None:
    t = build_transcript(turns(("user", "old"), ("assistant", "older reply"),
                               ("user", "z" * 50_000)), budget_chars=800)
    assert t.turns_kept == 1 and t.turns_trimmed == 2
    assert "[2 earlier turns omitted]" in t.text and body(t)[0].endswith(" …")
    assert len(t.text) <= 800


def test_other_roles_and_blank_turns_skipped() -> None:
    t = build_transcript(turns(("system", "you are a persona"), ("user", "real"),
                               ("tool", "{json}"), ("assistant", "   \n\x00 "),
                               ("narrator", "ignored"), ("assistant", "reply")),
                         budget_chars=10_000)
    assert body(t) == ["user: real", "assistant: reply"]
    assert (t.turns_kept, t.first_seq, t.last_seq) == (2, 2, 6)


def test_nul_and_controls_stripped_multiline_indented() -> None:
    t = build_transcript(turns(("user", "a\x00b\x07c\r\nsecond line")), budget_chars=10_000)
    assert body(t) == ["user: abc", "  second line"]
    assert "\x00" not in t.text and "\r" not in t.text


def test_empty_session() -> None:
    for session in ([], turns(("system", "x"), ("user", " \x00 "))):
        t = build_transcript(session, budget_chars=1_000)
        assert t.empty and t.text == "" and t.turns_kept == 0


role = st.sampled_from(["user", "assistant", "system", "tool"])
content = st.text(max_size=400) | st.text(alphabet="ab \n\x00", max_size=3000)
turn_lists = st.lists(st.tuples(role, content, st.integers(0, 60 * 24 * 10)), max_size=40)


def build(raw: list[tuple[str, str, int]]) -> list[Turn]:
    ordered = sorted(raw, key=lambda r: r[2])
    return [Turn(r, c, T0 + timedelta(minutes=m), seq=i + 1)
            for i, (r, c, m) in enumerate(ordered)]


@settings(max_examples=200, deadline=None)
@given(turn_lists, st.integers(500, 60_000))
def test_never_exceeds_budget_in_the_configurable_range(raw: list[tuple[str, str, int]],
                                                        budget: int) -> None:
    t = build_transcript(build(raw), budget_chars=budget)
    assert len(t.text) <= budget
    assert len(t.text) <= bound(t, budget)


@settings(max_examples=200, deadline=None)
@given(turn_lists, st.integers(1, 600))
def test_tight_bound_holds_for_any_budget(raw: list[tuple[str, str, int]], budget: int) -> None:
    t = build_transcript(build(raw), budget_chars=budget)
    assert len(t.text) <= bound(t, budget)
    if not t.empty:
        assert t.turns_kept >= 1  # the newest turn always makes it in, cut if need be
        assert t.text.split("\n")[-1].strip()  # never a dangling empty line


def test_tiny_budgets_can_exceed_the_budget() -> None:
    """Documents the floor: below ~350 chars the room for turns is 100 whatever the budget.
    Settings rejects such budgets (>= 500), so it cannot happen in a configured worker."""
    t = build_transcript(turns(("user", "old"), ("user", "q" * 500)), budget_chars=100)
    assert len(t.text) > 100
    assert len(t.text) <= bound(t, 100)
