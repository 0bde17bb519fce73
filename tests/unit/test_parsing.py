"""parse_extraction: the model's reply is untrusted text, so the parser must never raise and
must only let through candidates that are safe to embed and insert into PostgreSQL."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from eros.core.categories import CATEGORIES
from eros.memory.core.parsing import MAX_CONTENT_CHARS, ParseResult, parse_extraction

# Budgets keep the whole unit suite under ten seconds; raise them locally to fuzz harder.
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JSONISH = settings(FAST, max_examples=50)


def mem(content: str, category: str = "fact", **extra: Any) -> dict[str, Any]:
    return {"content": content, "category": category, **extra}


def reply(*items: dict[str, Any]) -> str:
    return json.dumps({"memories": list(items)})


def contents(result: ParseResult) -> list[str]:
    return [c.content for c in result.candidates]


def _no_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" not in value
    if isinstance(value, dict):
        return all(_no_nul(k) and _no_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_no_nul(v) for v in value)
    return True


def assert_safe(result: ParseResult, max_items: int = 10) -> None:
    """The invariants every result holds, whatever the input."""
    assert isinstance(result, ParseResult)
    assert result.status in ("ok", "empty", "unparseable")
    assert (result.status == "ok") == bool(result.candidates)
    assert len(result.candidates) <= max_items
    assert result.dropped >= 0
    for c in result.candidates:
        assert c.content and c.content == c.content.strip()
        assert len(c.content) <= MAX_CONTENT_CHARS
        assert not any(ord(ch) < 32 or ch == "\x7f" for ch in c.content)
        c.content.encode("utf-8")  # no lone surrogates
        assert c.category in CATEGORIES
        assert c.importance is None or 0.0 <= c.importance <= 1.0
        # metadata goes into jsonb: strict JSON (no NaN/Infinity) and no NUL anywhere
        json.dumps(c.extra_metadata, allow_nan=False)
        assert _no_nul(c.extra_metadata)


# --- strategies ----------------------------------------------------------------------------

json_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
                | st.text(max_size=20))
json_values = st.recursive(
    json_scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids,
                                                              max_size=4),
    max_leaves=20,
)
memory_like = st.fixed_dictionaries(
    {"content": st.text(max_size=40) | json_values},
    optional={"category": st.text(max_size=12) | json_values,
              "importance": json_scalars | st.sampled_from(["high", "low", "7", "nan"]),
              "domain": json_values, "confidence": json_values},
)
documents = st.one_of(
    st.fixed_dictionaries({"memories": st.lists(memory_like | json_values, max_size=14)}),
    st.lists(memory_like, max_size=14),
    memory_like,
    json_values,
)
prose = st.text(alphabet=st.characters(blacklist_characters="{}[]`\"\\"), max_size=30)


@st.composite
def wrapped_replies(draw: st.DrawFn) -> str:
    """A JSON-ish document, possibly fenced, with prose around it."""
    body = json.dumps(draw(documents), ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        body = f"```{draw(st.sampled_from(['', 'json', 'JSON']))}\n{body}\n```"
    return draw(prose) + body + draw(prose)


# --- never raises ----------------------------------------------------------------------------

@FAST
@given(st.text())
@example("{" * 5000)
@example("[" * 5000 + "]" * 5000)
@example('{"memories": [{"content": "x", "importance": 1' + "0" * 400 + "}]}")
@example('{"memories": [{"content": "x", "importance": -1' + "0" * 400 + "}]}")
@example('{"memories": [{"content": "x", "n": NaN, "m": Infinity, "k": -Infinity}]}')
@example("```json\n{\"memories\": [\n```")
def test_never_raises_on_any_text(text: str) -> None:
    assert_safe(parse_extraction(text))
    assert_safe(parse_extraction(text, salvage=True))


@JSONISH
@given(wrapped_replies())
def test_never_raises_on_json_ish_replies(text: str) -> None:
    assert_safe(parse_extraction(text))


@JSONISH
@given(wrapped_replies(), st.data())
def test_truncated_prefixes_with_salvage(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    assert_safe(parse_extraction(text[:cut], salvage=True))


@pytest.mark.parametrize("value", [None, 42, b"bytes", ["list"]])
def test_non_text_reply_is_unparseable(value: Any) -> None:
    assert parse_extraction(value).status == "unparseable"


# --- where the JSON is found -------------------------------------------------------------------

@JSONISH
@given(st.lists(st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=20),
                min_size=1, max_size=10, unique_by=lambda s: s.casefold()),
       st.sampled_from(["whole", "fence", "prose"]), prose, prose)
def test_valid_documents_round_trip(texts: list[str], wrap: str, before: str,
                                    after: str) -> None:
    body = reply(*(mem(t) for t in texts))
    text = {"whole": body, "fence": f"{before}```json\n{body}\n```{after}",
            "prose": f"{before}{body}{after}"}[wrap]
    from eros.core.text import normalise_for_dedup

    expected = list(dict.fromkeys(normalise_for_dedup(t) for t in texts))
    got = [normalise_for_dedup(c) for c in contents(parse_extraction(text))]
    assert got == expected


def test_whole_reply() -> None:
    result = parse_extraction(reply(mem("Lives in Shanghai"), mem("Likes jazz", "preference")))
    assert result.status == "ok"
    assert contents(result) == ["Lives in Shanghai", "Likes jazz"]
    assert [c.category for c in result.candidates] == ["fact", "preference"]


def test_fenced_block_inside_prose() -> None:
    text = "Sure! Here you go:\n```json\n" + reply(mem("Has a cat")) + "\n```\nHope it helps."
    assert contents(parse_extraction(text)) == ["Has a cat"]


def test_later_fence_when_first_is_not_json() -> None:
    text = "```\nnot json\n```\nand\n```json\n" + reply(mem("Plays piano")) + "\n```"
    assert contents(parse_extraction(text)) == ["Plays piano"]


def test_first_balanced_object_in_prose() -> None:
    text = "The memories are " + reply(mem("Works as a nurse")) + " — that is all."
    assert contents(parse_extraction(text)) == ["Works as a nurse"]


def test_braces_and_quotes_inside_strings() -> None:
    tricky = 'Said "use {curly} and [square] brackets}]" once'
    text = "prefix " + reply(mem(tricky)) + " suffix }"
    assert contents(parse_extraction(text)) == [tricky]


def test_top_level_list_and_single_object() -> None:
    assert contents(parse_extraction(json.dumps([mem("a b"), mem("c d")]))) == ["a b", "c d"]
    assert contents(parse_extraction(json.dumps(mem("only one")))) == ["only one"]


@pytest.mark.parametrize("key", ["memories", "memory", "items", "candidates", "results"])
def test_alternative_list_keys(key: str) -> None:
    assert contents(parse_extraction(json.dumps({key: [mem("x y")]}))) == ["x y"]


def test_unparseable_and_empty() -> None:
    assert parse_extraction("I could not find anything.").status == "unparseable"
    assert parse_extraction('{"note": "nothing"}').status == "unparseable"
    empty = parse_extraction('{"memories": []}')
    assert empty.status == "empty" and empty.candidates == ()


# --- item validation -----------------------------------------------------------------------

def test_at_most_max_items_kept() -> None:
    result = parse_extraction(reply(*(mem(f"memory number {i}") for i in range(14))))
    assert len(result.candidates) == 10 and result.dropped == 4
    assert contents(result)[-1] == "memory number 9"
    assert len(parse_extraction(reply(*(mem(f"m {i}") for i in range(5))),
                                max_items=3).candidates) == 3


def test_normalised_duplicates_dropped() -> None:
    result = parse_extraction(reply(mem("Lives in Shanghai."), mem("lives  in SHANGHAI"),
                                    mem("Lives in Shanghai!"), mem("Lives in Tokyo")))
    assert contents(result) == ["Lives in Shanghai.", "Lives in Tokyo"]
    assert result.dropped == 2


def test_duplicates_do_not_use_up_the_limit() -> None:
    items = [mem("same thing")] * 5 + [mem(f"distinct {i}") for i in range(10)]
    result = parse_extraction(reply(*items))
    assert len(result.candidates) == 10 and "distinct 8" in contents(result)


def test_invalid_items_dropped_one_by_one_with_errors() -> None:
    result = parse_extraction(reply(mem("good one"), {"category": "fact"}, mem(""),
                                    mem("   \x00  "), {"content": 42}, "a string",  # type: ignore[arg-type]
                                    mem("good two")))
    assert contents(result) == ["good one", "good two"]
    assert result.dropped == 5
    assert len(result.errors) == 5
    assert any("content" in e for e in result.errors)


@pytest.mark.parametrize(("given_", "expected"), [
    (0.7, 0.7), (0, 0.0), (1, 1.0), (-0.3, 0.0), (-5, 0.0),
    (7, 0.7), (10, 1.0), (1.5, 0.15), (11, 1.0), (1e300, 1.0), (10**400, 1.0), (-(10**400), 0.0),
    ("high", 0.8), ("HIGH ", 0.8), ("low", 0.25), ("medium", 0.5), ("critical", 1.0),
    ("0.4", 0.4), ("8", 0.8), ("very", None), ("", None), (None, None), (True, None),
    (float("nan"), None), ("nan", None), ([0.5], None), ({"v": 1}, None),
])
def test_importance_clamped(given_: Any, expected: float | None) -> None:
    result = parse_extraction(json.dumps({"memories": [mem("x y", importance=given_)]}))
    got = result.candidates[0].importance if result.candidates else "dropped"
    if expected is None:
        assert got is None or got == "dropped"
    else:
        assert got == pytest.approx(expected)


def test_nan_literal_importance() -> None:
    result = parse_extraction('{"memories": [{"content": "x", "importance": NaN}]}')
    assert result.candidates[0].importance is None


def test_metadata_kept_and_nul_stripped() -> None:
    item = mem("Has a sister", "family", domain="fam\x00ily", confidence=0.9,
               evidence_type="explicit", nested={"k\x00ey": ["v\x00", 1, None]},
               weird=float("nan"))
    candidate = parse_extraction(json.dumps({"memories": [item]})).candidates[0]
    assert candidate.category == "relation"
    meta = candidate.extra_metadata
    assert meta == {"domain": "family", "confidence": 0.9, "evidence_type": "explicit"}
    # unknown keys (and a known key whose value is not a short scalar) are dropped, counted
    assert candidate.metadata_fields(["domain", "confidence", "evidence_type"])[1] == 2
    assert candidate.metadata_fields(["domain"]) == ({"domain": "family"}, 4)


def test_non_finite_metadata_is_json_safe() -> None:
    result = parse_extraction('{"memories": [{"content": "x", "confidence": Infinity,'
                              ' "domain": [-Infinity]}]}')
    meta = result.candidates[0].extra_metadata
    assert json.loads(json.dumps(meta, allow_nan=False)) == {}
    assert result.candidates[0].metadata_fields(["confidence", "domain"]) == ({}, 2)


def test_metadata_values_are_capped_not_cut() -> None:
    item = mem("Has a sister", domain="d" * 65, temporality="long_term", persistence=True,
               evidence_type={"nested": "no"})
    candidate = parse_extraction(json.dumps({"memories": [item]})).candidates[0]
    assert candidate.extra_metadata == {"temporality": "long_term", "persistence": True}


def test_content_control_characters_stripped_and_whitespace_folded() -> None:
    candidate = parse_extraction(reply(mem("  likes\x00 jazz\x07\n and\tblues \ud800 "))) \
        .candidates[0]
    assert candidate.content == "likes jazz and blues"


def test_content_capped() -> None:
    candidate = parse_extraction(reply(mem("y" * 5000))).candidates[0]
    assert len(candidate.content) == MAX_CONTENT_CHARS


# --- salvage of a reply cut off at max_tokens ------------------------------------------------

def test_salvage_keeps_complete_objects_of_a_truncated_reply() -> None:
    full = reply(mem("first {brace}"), mem("second"), mem("third one"))
    cut = full[: full.index("third") + 3]
    assert parse_extraction(cut).status == "unparseable"
    salvaged = parse_extraction(cut, salvage=True)
    assert contents(salvaged) == ["first {brace}", "second"]


def test_salvage_of_a_prefix_before_any_object_is_empty() -> None:
    assert parse_extraction('{"memories": [', salvage=True).status == "empty"


def test_salvage_does_not_override_a_complete_document() -> None:
    assert contents(parse_extraction(reply(mem("whole")), salvage=True)) == ["whole"]


def test_importance_never_nan() -> None:
    for value in ("nan", "NaN", "inf", "-inf"):
        imp = parse_extraction(reply(mem("x", importance=value))).candidates[0].importance
        assert imp is None or (not math.isnan(imp) and 0 <= imp <= 1)
