"""Rendering recalled memories into the system-prompt section (no database)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from eros.recall.core.render import (
    EN,
    ZH,
    Labels,
    get_labels,
    group_by_category,
    prune_duplicates,
    quote_note,
    render_memories,
)


@dataclass(frozen=True)
class M:
    content: str
    category: str
    layer: str = "profile"
    tag: str = ""


def test_chinese_sections_in_vocabulary_order_one_bullet_each() -> None:
    memories = [M("她妈妈希望她早点结婚", "relation"), M("住在上海", "fact"),
                M("喜欢摩卡", "preference"), M("在一家律所工作", "fact")]
    assert render_memories(memories, "zh") == (
        ZH.header + "\n\n"
        "【基本信息】\n- 「住在上海」\n- 「在一家律所工作」\n\n"
        "【喜好】\n- 「喜欢摩卡」\n\n"
        "【人际关系】\n- 「她妈妈希望她早点结婚」")


def test_english_labels() -> None:
    memories = [M("Feels stressed about work", "emotion"), M("Moved to Tokyo", "event")]
    assert render_memories(memories, "en") == (
        EN.header + "\n\nRecent events:\n- “Moved to Tokyo”\n\n"
        "Emotional state:\n- “Feels stressed about work”")


def test_every_category_has_a_label_in_both_sets() -> None:
    for labels in (ZH, EN):
        assert set(labels.categories) == {"fact", "preference", "event", "emotion", "relation"}
        assert len(set(labels.categories.values())) == 5


@pytest.mark.parametrize(("labels", "line"), [("zh", ZH.empty), ("en", EN.empty)])
def test_empty_state_line(labels: str, line: str) -> None:
    assert render_memories([], labels) == line
    assert render_memories([M("   ", "fact")], labels) == line
    assert line.strip()


def test_duplicates_across_layers_are_pruned_and_profile_wins() -> None:
    rel = M("Lives in Shanghai.", "fact", layer="relationship", tag="rel")
    prof = M("lives in  shanghai", "fact", layer="profile", tag="prof")
    other = M("Likes jazz", "preference", layer="relationship")
    kept = prune_duplicates([rel, other, prof])
    assert [m.tag for m in kept] == ["prof", ""]  # the profile copy, in the better rank's slot
    assert render_memories([rel, other, prof], "en").count("hanghai") == 1
    assert "lives in  shanghai" not in render_memories([rel, other, prof], "en")


def test_duplicates_within_a_layer_keep_the_best_ranked() -> None:
    a = M("Likes mocha", "preference", tag="a")
    b = M("likes mocha!", "preference", tag="b")
    assert [m.tag for m in prune_duplicates([a, b])] == ["a"]


def test_similar_but_different_memories_are_both_kept() -> None:
    kept = prune_duplicates([M("Lives in Shanghai", "fact"), M("Lived in Shanghai", "fact")])
    assert len(kept) == 2


def test_a_memory_with_newlines_stays_one_bullet() -> None:
    text = render_memories([M("works late\nboss piles on work", "emotion")], "en")
    assert text == EN.header + "\n\nEmotional state:\n- “works late boss piles on work”"


def test_custom_labels_and_unknown_categories() -> None:
    custom = Labels(categories={"fact": "Facts"}, empty="nothing", heading="## {label}",
                    bullet="* ", other="Misc")
    assert render_memories([M("x", "fact"), M("y", "weird")], custom) == (
        "## Facts\n* “x”\n\n## Misc\n* “y”")
    assert render_memories([], custom) == "nothing"


def test_group_order_and_unknown_label_set() -> None:
    groups = group_by_category([M("a", "relation"), M("b", "fact"), M("c", "relation")])
    assert [(c, [m.content for m in ms]) for c, ms in groups] == [
        ("fact", ["b"]), ("relation", ["a", "c"])]
    with pytest.raises(ValueError, match="unknown label set"):
        get_labels("fr")


def test_a_quoted_note_cannot_close_its_own_quotes() -> None:
    assert quote_note('She said "stop" and \u201cleave\u201d\nnow', EN) == \
        "\u201cShe said 'stop' and 'leave' now\u201d"
    assert quote_note("\u300c\u4f60\u597d\u300d", ZH) == "\u300c\u300e\u4f60\u597d\u300f\u300d"


def test_each_label_set_swaps_its_own_quotes() -> None:
    """The swap tables are cached per label set: two sets never share one."""
    mine = Labels(categories=EN.categories, empty="", quotes=("<", ">"),
                  quote_swap={"<": "(", ">": ")"})
    other = Labels(categories=EN.categories, empty="", quotes=("[", "]"),
                   quote_swap={"[": "{", "]": "}"})
    assert quote_note("a <b> [c]", mine) == "<a (b) [c]>"
    assert quote_note("a <b> [c]", other) == "[a <b> {c}]"
    assert quote_note("a <b> [c]", mine) == "<a (b) [c]>"
