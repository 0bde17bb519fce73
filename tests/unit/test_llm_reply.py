"""A chat completion's reply read from its JSON text (eros/providers/llm.py: the SDK returns the
text, ``completion_of`` reads the five values classify uses)."""

from __future__ import annotations

import json

import pytest

from eros.errors import TransientError
from eros.providers.llm import completion_of


def test_the_first_choice_model_and_usage_are_read() -> None:
    raw = json.dumps({"id": "x", "model": "m-1", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "{\"memories\": []}"},
         "finish_reason": "length"},
        {"index": 1, "message": {"role": "assistant", "content": "other"},
         "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}})
    completion = completion_of(raw, "fallback")
    assert (completion.text, completion.finish_reason, completion.model) == \
        ('{"memories": []}', "length", "m-1")
    assert (completion.prompt_tokens, completion.completion_tokens) == (12, 5)
    assert completion.truncated


def test_missing_parts_read_as_the_sdk_gave_them() -> None:
    completion = completion_of(json.dumps({"choices": [{"message": {"content": None}}]}), "mine")
    assert (completion.text, completion.finish_reason, completion.model) == ("", None, "mine")
    assert (completion.prompt_tokens, completion.completion_tokens) == (0, 0)


@pytest.mark.parametrize("raw", ["not json", "[]", json.dumps({"choices": []}),
                                 json.dumps({"model": "m"}), json.dumps({"choices": ["x"]})])
def test_a_reply_without_a_choice_is_transient(raw: str) -> None:
    with pytest.raises(TransientError) as err:
        completion_of(raw, "m")
    assert err.value.provider == "llm"
    # a fixed message, never the body
    assert str(err.value) in ("LLM reply was not JSON", "LLM reply had no choices")
