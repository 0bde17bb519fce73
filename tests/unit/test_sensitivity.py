"""Special-category labels, pure (issue 26): the model's label is normalised (unknown → none),
a merge keeps the most sensitive, the offline extractor labels by cue words in English and
Chinese, a crisis renders with its label."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from eros.core.sensitivity import (
    SENSITIVITY_LABELS,
    SENSITIVITY_ORDER,
    most_sensitive,
    normalise_sensitivity,
)
from eros.memory.core.parsing import parse_extraction
from eros.providers.offline.heuristic import heuristic_extract
from eros.providers.offline.sensitivity import sensitivity_label
from eros.recall.core.render import render_memories


@pytest.mark.parametrize(("value", "expected"), [
    ("health", "health"), (" Crisis ", "crisis"), ("BELIEFS", "beliefs"), ("none", None),
    ("", None), ("spicy", None), (None, None), (3, None), (["health"], None)])
def test_labels_are_normalised(value: object, expected: str | None) -> None:
    assert normalise_sensitivity(value) == expected


def test_the_order_covers_every_label_and_crisis_leads() -> None:
    assert sorted(SENSITIVITY_ORDER) == sorted(SENSITIVITY_LABELS)
    assert SENSITIVITY_ORDER[0] == "crisis"
    assert most_sensitive(["beliefs", None, "health"]) == "health"
    assert most_sensitive(["beliefs", "crisis", "sexuality"]) == "crisis"
    assert most_sensitive([None, "nope"]) is None


def test_the_reply_carries_the_label_and_unknown_ones_become_none() -> None:
    reply = ('{"memories": [{"content": "Has asthma", "category": "fact", '
             '"sensitivity": "Health"}, {"content": "Likes tea", "category": "preference", '
             '"sensitivity": "gossip"}, {"content": "Lives in Lyon", "category": "fact"}]}')
    parsed = parse_extraction(reply, max_items=10)
    assert [c.sensitivity for c in parsed.candidates] == ["health", None, None]
    assert all("sensitivity" not in c.extra_metadata for c in parsed.candidates)


@pytest.mark.parametrize(("clause", "label"), [
    ("I have had insomnia for months", "health"),
    ("my blood pressure is too high", "health"),
    ("sometimes I think about killing myself", "crisis"),
    ("he hits me when he drinks", "crisis"),
    ("I came out as bisexual last spring", "sexuality"),
    ("I go to church every Sunday", "beliefs"),
    ("I voted for the greens", "beliefs"),
    ("my DNA test came back", "biometric"),
    ("my ethnicity matters to me", "ethnicity"),
    ("我最近一直失眠", "health"),
    ("我有时候不想活了", "crisis"),
    ("我跟父母出柜了", "sexuality"),
    ("我是佛教徒", "beliefs"),
    ("我是回族人", "ethnicity"),
    ("我做了基因检测", "biometric"),
    ("I love jazz and long walks", None),
    ("我喜欢喝咖啡", None),
    ("my insomnia made me want to die", "crisis"),  # the most sensitive wins
])
def test_offline_cue_words(clause: str, label: str | None) -> None:
    assert sensitivity_label(clause) == label


def test_the_offline_extractor_labels_its_memories() -> None:
    memories = heuristic_extract("user: I have been feeling depressed since the winter\n"
                                 "user: I really love jazz music")
    labels = {m["content"]: m.get("sensitivity") for m in memories}
    assert "health" in labels.values() and None in labels.values()


@dataclass(frozen=True)
class _M:
    content: str
    category: str = "emotion"
    layer: str = "profile"
    sensitivity: str | None = None


def test_a_crisis_renders_with_its_label_outside_the_quotes() -> None:
    text = render_memories([_M("Talked about self-harm", sensitivity="crisis"),
                            _M("Felt calm today", sensitivity="health"), _M("Is tired")], "en")
    lines = text.splitlines()
    assert "- [CRISIS — check on the user's safety] \u201cTalked about self-harm\u201d" in lines
    assert "- \u201cFelt calm today\u201d" in lines and "- \u201cIs tired\u201d" in lines


@pytest.mark.parametrize("order", ["relationship_first", "profile_first"])
def test_pruning_a_duplicate_keeps_the_most_sensitive_copys_mark(order: str) -> None:
    """Issue 32: a crisis-labelled relationship copy and an unlabelled profile copy of the same
    note rendered the profile copy — and no crisis mark."""
    rel = _M("Said she wants to hurt herself", layer="relationship", sensitivity="crisis")
    prof = _M("said she wants to hurt herself.", layer="profile")
    memories = [rel, prof] if order == "relationship_first" else [prof, rel]
    lines = render_memories(memories, "en").splitlines()
    bullets = [line for line in lines if line.startswith("- ")]
    assert len(bullets) == 1  # still pruned: one bullet, the profile copy's wording
    assert bullets[0].startswith("- [CRISIS — check on the user's safety] ")
    assert "said she wants to hurt herself." in bullets[0]
