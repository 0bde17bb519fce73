"""normalise_category keeps the vocabulary at exactly five, so grouping by category in recall
never explodes into the long tail of labels a model invents."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eros.core.categories import CATEGORIES, DEFAULT_CATEGORY, normalise_category


@pytest.mark.parametrize("category", CATEGORIES)
def test_the_five_map_to_themselves(category: str) -> None:
    assert normalise_category(category) == category


@pytest.mark.parametrize(("raw", "expected"), [
    ("Preferences", "preference"), ("PREFERENCE", "preference"), ("  likes \n", "preference"),
    ("Dislikes", "preference"), ("hobby", "preference"), ("Interests", "preference"),
    ("family", "relation"), ("Relationship", "relation"), ("friends", "relation"),
    ("Feelings", "emotion"), ("mood", "emotion"), ("emotional state", "emotion"),
    ("Emotional-State", "emotion"), ("emotional_state", "emotion"),
    ("emotional / state", "emotion"),
    ("Events", "event"), ("plans", "event"), ("milestone", "event"),
    ("Personal Info", "fact"), ("occupation", "fact"), ("Facts", "fact"),
    ("情绪", "emotion"), ("偏好", "preference"), ("关系", "relation"), ("事件", "event"),
    ("事实", "fact"), (" 情感 ", "emotion"),
])
def test_synonyms_casing_and_whitespace(raw: str, expected: str) -> None:
    assert normalise_category(raw) == expected


@pytest.mark.parametrize("raw", ["weather", "", "   ", "fact!", "pref", "misc", "other", "-"])
def test_unknown_becomes_fact(raw: str) -> None:
    assert normalise_category(raw) == DEFAULT_CATEGORY == "fact"


@pytest.mark.parametrize("raw", [None, 3, 2.5, True, ["fact"], {"category": "event"}, b"event"])
def test_non_strings_become_fact(raw: Any) -> None:
    assert normalise_category(raw) == "fact"


@settings(max_examples=300, deadline=None)
@given(st.text() | st.none() | st.integers() | st.floats() | st.lists(st.text(), max_size=3))
def test_result_is_always_one_of_the_five(raw: Any) -> None:
    assert normalise_category(raw) in CATEGORIES


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(CATEGORIES), st.sampled_from(["", " ", "\t", "\n "]),
       st.sampled_from([str.upper, str.title, str.lower]))
def test_decoration_does_not_change_a_known_category(category: str, pad: str,
                                                     case: Any) -> None:
    assert normalise_category(pad + case(category) + pad) == category
