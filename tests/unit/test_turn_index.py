"""Which turns the classify path indexes and how (issue 31), and how an embedding request is
split past the provider's limits: pure functions."""

from __future__ import annotations

from datetime import UTC, datetime

from eros.core.transcript import Turn
from eros.dreaming.services.turn_index import (
    TurnText,
    cited_labels,
    judged_text,
    labelled,
    status_of,
    user_turns,
)
from eros.guard.core.guard import KEEP, Verdict
from eros.memory.core.parsing import Candidate
from eros.providers.batches import request_slices

NOW = datetime(2026, 12, 6, tzinfo=UTC)


def test_one_request_for_a_session_split_only_past_the_limits() -> None:
    assert request_slices([]) == []
    assert request_slices(["a"] * 10) == [slice(0, 10)]
    assert request_slices(["a"] * 2500) == [slice(0, 1000), slice(1000, 2000),
                                            slice(2000, 2500)]
    # tokens: one a character (the conservative estimate), cut before the text that passes
    assert request_slices(["x" * 60, "x" * 60, "x" * 10], max_tokens=100) == [
        slice(0, 1), slice(1, 3)]
    assert request_slices(["x" * 500], max_tokens=100) == [slice(0, 1)]  # alone, never empty


def test_the_user_s_readable_turns_only_voice_tags_and_invisibles_removed() -> None:
    turns = [Turn("user", "I moved\u200b to Tokyo", NOW, 1),
             Turn("assistant", "Welcome!", NOW, 2),
             Turn("user", "[laughs] I can't sleep (sighs)", NOW, 3, "voice"),
             Turn("user", "export my chats?", NOW, 4, "product_qa"),
             Turn("user", " \x00 \u200b ", NOW, 5)]
    got = user_turns(turns, {"text", "voice"})
    assert [(t.seq, t.text) for t in got] == [(1, "I moved to Tokyo"), (3, "I can't sleep")]
    assert judged_text("[laughs] I can't sleep (sighs)", "voice") == "I can't sleep"
    assert judged_text("[laughs] as typed", "text") == "[laughs] as typed"


def test_labels_come_from_the_text_and_from_every_citing_candidate() -> None:
    window = (10, 11, 12)
    cited = cited_labels([
        Candidate(content="Goes to church", sources=(1,), sensitivity="health"),
        Candidate(content="Fine", sources=(2,)),
        Candidate(content="No citation", sensitivity="beliefs"),  # the window
    ], window)
    assert cited == {10: {"health", "beliefs"}, 11: {"beliefs"}, 12: {"beliefs"}}
    turns = [TurnText(10, NOW, "We went to church"), TurnText(11, NOW, "I have insomnia"),
             TurnText(12, NOW, "nothing special"), TurnText(13, NOW, "plain")]
    kept, withheld = labelled(turns, cited, frozenset())
    assert [t.sensitivity for t in kept] == ["health", "health", "beliefs", None]
    kept, withheld = labelled(turns, cited, frozenset({"beliefs"}))
    assert [t.seq for t in kept] == [13] and withheld == 3


def test_a_turn_s_status_from_the_guard_s_verdict() -> None:
    assert status_of(KEEP, False) == "current"
    assert status_of(KEEP, True) == "unscreened"
    assert status_of(Verdict(False, "instruction", "meaning.classifier", "meaning"),
                     False) == "quarantined"
    assert status_of(Verdict(False, "unverified", "llm.truncated", "llm"), False) \
        == "quarantined"
    for layer in ("rules", "secrets", "length"):
        assert status_of(Verdict(False, "secret", "x", layer), False) is None
