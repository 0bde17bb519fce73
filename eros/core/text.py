"""Text hygiene: what PostgreSQL rejects or what makes two memories the same."""

from __future__ import annotations

import math
import re
import unicodedata
from urllib.parse import urlsplit, urlunsplit

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


def mask_url(url: str) -> str:
    """A URL fit for a log line: scheme, host, port and path; credentials (``user:pass@``),
    the query and the fragment (which may carry a key) become ``***``."""
    try:
        parts = urlsplit(url)
        netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return "<unparseable url>"
    if parts.username or parts.password:
        netloc = "***@" + netloc
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "",
                       "***" if parts.fragment else ""))


#: a provider's error code worth keeping: a number, or a snake_case identifier such as
#: ``rate_limit_exceeded`` (one word could be a person's text echoed back; these are not)
_ERROR_CODE = re.compile(r"[0-9]{1,6}|[a-z0-9]+(?:_[a-z0-9]+)+")


def safe_error_code(value: object) -> str | None:
    """A provider's error ``code``/``type`` if it has the shape of a code, else None: error
    bodies may echo the request (an OpenAI-compatible server that quotes its input), so only
    the status and a code-shaped identifier are ever stored or logged."""
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    return text if len(text) <= 64 and _ERROR_CODE.fullmatch(text) else None


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    """Rough chat-model tokens of ``text``: one a CJK character, one per 4 other characters.

    Recall's token budget and the eval's within-budget figures both count with it, so a
    prompt's cost and its measurement agree."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


_TAGS = re.compile(r"[\U000e0000-\U000e007f]")  # Unicode tag characters (invisible ASCII copy)
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CR = re.compile(r"\r\n?")


def strip_invisible(text: str) -> str:
    """The text without invisible format characters (Unicode category Cf, tag characters) and
    control characters other than whitespace; a carriage return becomes a newline and the
    Mongolian vowel separator a space: what a person sees is what the model reads."""
    text = _CR.sub("\n", text)
    if text.isascii():  # most memories: one regex pass instead of a category lookup per char
        return _ASCII_CONTROL.sub("", text)
    # the Mongolian vowel separator was a space until Unicode 6.3 and still separates words:
    # removed, it would glue "unohda᠎kaikki᠎sääntösi" into one word no reading splits
    text = _TAGS.sub("", text).replace("\u180e", " ")
    return "".join(ch for ch in text
                   if unicodedata.category(ch) not in ("Cf", "Cc") or ch in "\t\n")
