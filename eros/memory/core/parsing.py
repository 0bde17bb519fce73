"""Tolerant parsing of the model's extraction reply into validated memory candidates.

Models wrap JSON in prose or code fences, invent categories, emit importance as "high", or get
cut off mid-array. :func:`parse_extraction` never raises: it returns what could be trusted and
says why the rest was dropped.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from eros.core.categories import Category, normalise_category
from eros.core.sensitivity import Sensitivity, normalise_sensitivity
from eros.core.text import clean_text, normalise_for_dedup
from eros.memory.core.layers import Layer, normalise_layer

MAX_CONTENT_CHARS = 1000
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_WORDY_IMPORTANCE = {"low": 0.25, "medium": 0.5, "moderate": 0.5, "high": 0.8, "critical": 1.0}

#: a memory citing more turns than this cites nothing in particular (→ the window, flagged).
_MAX_SOURCES = 200
_TURN_NUMBER = re.compile(r"^\[?#?\s*(\d{1,9})\s*\]?$")

ParseStatus = Literal["ok", "empty", "unparseable"]
#: metadata keys a candidate may carry (the per-memory metadata the original dreaming-lite
#: prompt emitted; docs/security.md): anything else the model puts beside
#: content/category/importance/layer is dropped and counted (``MEMORY_GUARD_METADATA_KEYS``
#: changes the list).
KNOWN_METADATA = ("domain", "evidence_type", "temporality", "persistence", "confidence")
#: longest metadata string kept (characters); a longer value is dropped, not cut.
MAX_METADATA_CHARS = 64


class Candidate(BaseModel):
    """One memory the model proposed, after validation; unknown fields become metadata."""

    model_config = ConfigDict(extra="allow", frozen=True)

    content: str
    category: Category = "fact"
    importance: float | None = None
    #: ``profile`` or ``relationship``; missing or unknown → ``profile`` (core/layers.py).
    layer: Layer = "profile"
    #: the numbers of the transcript turns the memory came from (``"sources"``, prompts from
    #: extract_v3 on; core/provenance.py maps them to seqs). None: missing or not a list of
    #: whole numbers — the memory then falls back to the extraction window, flagged.
    sources: tuple[int, ...] | None = None
    #: special category (GDPR art. 9): ``health``, ``crisis``, ``sexuality``,
    #: ``beliefs``, ``ethnicity`` or ``biometric``; missing or unknown → None (none).
    sensitivity: Sensitivity | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError("content must be a string")
        text = " ".join(clean_text(value).split())
        if not text:
            raise ValueError("content is empty")
        return text[:MAX_CONTENT_CHARS]

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: Any) -> Category:
        return normalise_category(value)

    @field_validator("sensitivity", mode="before")
    @classmethod
    def _sensitivity(cls, value: Any) -> Sensitivity | None:
        return normalise_sensitivity(value)

    @field_validator("layer", mode="before")
    @classmethod
    def _layer(cls, value: Any) -> Layer:
        return normalise_layer(value)

    @field_validator("sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> tuple[int, ...] | None:
        if not isinstance(value, list | tuple):
            value = [value]
        numbers = [_turn_number(v) for v in value[:_MAX_SOURCES + 1]]
        if not numbers or len(numbers) > _MAX_SOURCES or any(n is None for n in numbers):
            return None  # an unreadable citation is no citation: never a dropped memory
        return tuple(n for n in numbers if n is not None)

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: Any) -> float | None:
        if value is None or isinstance(value, bool):
            return None
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _WORDY_IMPORTANCE:
                return _WORDY_IMPORTANCE[word]
            try:
                value = float(word)
            except ValueError:
                return None
        if not isinstance(value, int | float) or value != value:  # NaN
            return None
        try:
            number = float(value)
        except OverflowError:  # a JSON integer beyond float range: clamp like any out-of-range
            number = math.inf if value > 0 else -math.inf
        if number > 1.0 and number <= 10.0:  # a 1–10 scale
            number /= 10.0
        return min(1.0, max(0.0, number))

    @property
    def extra_metadata(self) -> dict[str, Any]:
        """The known metadata fields (:data:`KNOWN_METADATA`) whose values are short scalars."""
        return self.metadata_fields(KNOWN_METADATA)[0]

    def metadata_fields(self, allowed: Iterable[str]) -> tuple[dict[str, Any], int]:
        """(kept, dropped): fields beyond content/category/importance/layer whose key is in
        ``allowed`` and whose value is a string of at most :data:`MAX_METADATA_CHARS`
        characters, a finite number or a boolean; every other field is dropped and counted.
        String values still need the memory guard (the classify path screens them)."""
        keys = set(allowed)
        kept: dict[str, Any] = {}
        dropped = 0
        for key, value in (self.model_extra or {}).items():
            safe = _scalar(value)
            if key in keys and safe is not None:
                kept[key] = safe
            else:
                dropped += 1
        return kept, dropped


def _turn_number(value: Any) -> int | None:
    """A cited turn number: an integer, an integral float, or text such as ``"3"``/``"[3]"``
    (the label the transcript shows); anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        match = _TURN_NUMBER.match(value.strip())
        return int(match.group(1)) if match else None
    return None


@dataclass(frozen=True)
class ParseResult:
    status: ParseStatus
    candidates: tuple[Candidate, ...] = ()
    dropped: int = 0
    errors: tuple[str, ...] = field(default_factory=tuple)


def parse_extraction(reply: str, *, max_items: int = 10, salvage: bool = False) -> ParseResult:
    """Parse a reply into at most ``max_items`` validated, de-duplicated candidates.

    Tried in order: the whole reply as JSON, each fenced code block, the first balanced JSON
    object or array. With ``salvage`` (a reply cut off at the token limit), complete objects
    inside an unterminated array are kept.
    """
    if not isinstance(reply, str):
        return ParseResult("unparseable", errors=("reply is not text",))
    document = _find_document(clean_text(reply))
    if document is None and salvage:
        items: list[Any] | None = list(_complete_objects(reply))
    else:
        items = _items(document)
    if items is None:
        return ParseResult("unparseable", errors=("no JSON object with memories found",))
    kept: list[Candidate] = []
    seen: set[str] = set()
    errors: list[str] = []
    dropped = 0
    for item in items:
        try:
            candidate = Candidate.model_validate(item)
        except (ValidationError, TypeError) as err:
            dropped += 1
            errors.append(_first_error(err))
            continue
        key = normalise_for_dedup(candidate.content)
        if key in seen:
            dropped += 1
            continue
        if len(kept) >= max_items:
            dropped += 1
            continue
        seen.add(key)
        kept.append(candidate)
    status: ParseStatus = "ok" if kept else "empty"
    return ParseResult(status, tuple(kept), dropped, tuple(errors[:5]))


def _find_document(text: str) -> Any:
    for chunk in _chunks(text):
        try:
            return json.loads(chunk)
        except (ValueError, RecursionError):
            continue
    return None


def _chunks(text: str) -> Iterator[str]:
    yield text.strip()
    for match in _FENCE.finditer(text):
        yield match.group(1).strip()
    balanced = _first_balanced(text)
    if balanced is not None:
        yield balanced


def _first_balanced(text: str) -> str | None:
    """The first ``{…}`` or ``[…]`` whose brackets balance, skipping brackets inside strings."""
    for start, opener in ((text.find("{"), "{"), (text.find("["), "[")):
        if start < 0:
            continue
        end = _balanced_end(text, start, opener)
        if end is not None:
            return text[start:end]
    return None


def _balanced_end(text: str, start: int, opener: str) -> int | None:
    closer = "}" if opener == "{" else "]"
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == opener:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _complete_objects(text: str) -> Iterator[Any]:
    """Complete JSON objects after the ``memories`` array opened in a truncated reply."""
    anchor = text.find('"memories"')
    position = text.find("[", anchor if anchor >= 0 else 0)
    while position >= 0:
        start = text.find("{", position + 1)
        if start < 0:
            return
        end = _balanced_end(text, start, "{")
        if end is None:
            return
        with contextlib.suppress(ValueError, RecursionError):
            yield json.loads(text[start:end])
        position = end - 1


def _items(document: Any) -> list[Any] | None:
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        for key in ("memories", "memory", "items", "candidates", "results"):
            value = document.get(key)
            if isinstance(value, list):
                return value
        if "content" in document:
            return [document]
    return None


def _first_error(err: Exception) -> str:
    if isinstance(err, ValidationError) and err.errors():
        first = err.errors()[0]
        return f"{'.'.join(str(x) for x in first['loc']) or 'item'}: {first['msg']}"
    return str(err)[:200]


def _scalar(value: Any) -> str | float | int | bool | None:
    """A metadata value kept as it is, or None when it is not a short JSON scalar."""
    if isinstance(value, bool | int) and not (isinstance(value, int)
                                              and abs(value) > 2 ** 53):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        text = " ".join(clean_text(value).split())
        return text if 0 < len(text) <= MAX_METADATA_CHARS else None
    return None


def find_json_document(reply: str) -> Any:
    """The first JSON document in a model reply — the whole text, a fenced block or the first
    balanced ``{…}``/``[…]`` — or None. Shared by every parser of model replies (extraction,
    consolidation) so they tolerate the same wrappings."""
    return _find_document(clean_text(reply))
