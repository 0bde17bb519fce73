"""Text hygiene: what PostgreSQL rejects or what makes two memories the same."""

from __future__ import annotations

import re
import unicodedata

# NUL is rejected by PostgreSQL text; lone surrogates cannot be encoded as UTF-8; other C0
# controls (except tab and newline) only confuse the model and the prompt.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|[\ud800-\udfff]")
_SPACE = re.compile(r"\s+")


def clean_text(value: str) -> str:
    """Strip NUL bytes, lone surrogates and control characters; keep tabs and newlines."""
    return _CONTROL.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))


def normalise_for_dedup(value: str) -> str:
    """The form two memories are compared in: NFKC, case-folded, whitespace and end-punctuation
    folded, so "Lives in Shanghai." and "lives in  shanghai" are the same memory."""
    folded = unicodedata.normalize("NFKC", value).casefold()
    folded = _SPACE.sub(" ", folded).strip()
    return folded.rstrip(".!?。！？…, ").strip()
