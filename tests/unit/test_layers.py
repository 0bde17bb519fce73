"""Memory layers: the model's layer field, the routing rule, the prompt and the offline rule."""

from __future__ import annotations

import json
import uuid

import pytest

from eros.errors import ConfigError
from eros.memory.core.layers import normalise_layer, route_instance
from eros.memory.core.parsing import parse_extraction
from eros.prompts import PROMPT_VERSIONS, load_prompt
from eros.providers.offline.heuristic import heuristic_extract
from eros.settings import load_settings

PERSONA = uuid.uuid4()


@pytest.mark.parametrize(("value", "layer"), [
    ("profile", "profile"), ("relationship", "relationship"), (" Relationship ", "relationship"),
    ("关系", "relationship"), (None, "profile"), ("shared", "profile"), (3, "profile"),
    ("", "profile"), (["relationship"], "profile"),
])
def test_layer_word_is_normalised(value: object, layer: str) -> None:
    assert normalise_layer(value) == layer


def test_routing_needs_a_relationship_memory_and_a_persona() -> None:
    assert route_instance("relationship", PERSONA) == PERSONA
    assert route_instance("relationship", None) is None
    assert route_instance("profile", PERSONA) is None


def test_reply_layers_parsed_missing_and_unknown_are_profile() -> None:
    reply = json.dumps({"memories": [
        {"content": "Lives in Tokyo", "category": "fact", "layer": "profile"},
        {"content": "Calls the companion Moon", "category": "preference",
         "layer": "relationship"},
        {"content": "Likes jazz", "category": "preference"},
        {"content": "Has a cat", "category": "fact", "layer": "galaxy"},
    ]})
    parsed = parse_extraction(reply)
    assert [(c.content, c.layer) for c in parsed.candidates] == [
        ("Lives in Tokyo", "profile"), ("Calls the companion Moon", "relationship"),
        ("Likes jazz", "profile"), ("Has a cat", "profile")]
    assert all("layer" not in c.extra_metadata for c in parsed.candidates)


def test_v3_prompt_is_v1_plus_the_layer_section_with_both_languages() -> None:
    v1, v3 = load_prompt(version="v1"), load_prompt(version="v3")
    assert v3.version == "extract_v3" and v1.version == "extract_v1"
    assert v3.system.startswith(v1.system) and len(v3.system) > len(v1.system)
    section = v3.system[len(v1.system):]
    assert '"relationship"' in section and '"profile"' in section
    assert "Call me Bunny" in section and "你答应过" in section
    assert set(PROMPT_VERSIONS) >= {"v1", "v3"}
    with pytest.raises(ValueError, match="unknown prompt version"):
        load_prompt(version="v9")


def test_prompt_version_setting_is_validated() -> None:
    assert load_settings(dreaming_prompt_version="v1").dreaming_prompt_version == "v1"
    with pytest.raises(ConfigError, match="DREAMING_PROMPT_VERSION"):
        load_settings(dreaming_prompt_version="v9")


def _transcript(*user_turns: str) -> str:
    return "Session date: 2026-12-01 (Tuesday)\n---\n" + "\n".join(
        f"user: {turn}" for turn in user_turns)


@pytest.mark.parametrize(("turn", "category", "layer", "content"), [
    ("I live in Shanghai", "fact", "profile", "Lives in Shanghai"),
    ("我住在上海", "fact", "profile", "住在上海"),
    ("call me Bunny", "preference", "relationship", "Wants the companion to call them Bunny"),
    ("You promised to watch that movie with me", "event", "relationship",
     "The companion promised to watch that movie with them"),
    ("I love talking to you every night", "preference", "relationship",
     "Loves talking to the companion every night"),
    ("你答应过下次陪我看完那部电影的", "event", "relationship", "你答应过下次陪我看完那部电影的"),
    ("我们的暗号是月亮", "relation", "relationship", "我们的暗号是月亮"),
    ("My mom thinks you are a bad influence", "relation", "relationship",
     "User's mom thinks the companion is a bad influence"),
])
def test_offline_extractor_follows_the_layer_rule(turn: str, category: str, layer: str,
                                                  content: str) -> None:
    [memory] = heuristic_extract(_transcript(turn))
    assert (memory["category"], memory["layer"], memory["content"]) == (category, layer, content)


def test_offline_extractor_still_skips_questions_to_the_companion() -> None:
    turns = ("Do you like ramen?", "你是不是也喜欢猫", "I miss you")
    assert heuristic_extract(_transcript(*turns)) == []
