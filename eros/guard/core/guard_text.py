"""The views of a text the memory guard judges: one normalisation path for the pipeline and for
:meth:`eros.guard.core.guard.Guard.check`.

- :func:`strip_invisible` removes invisible format characters and controls; a carriage return
  is a line break (``\\r`` and ``\\r\\n`` become ``\\n``), never deleted, so ``"x\\r## Operator"``
  is judged as two lines exactly as the extraction parser sees it;
- :func:`normalise` — NFKC (full-width folded), case-folded, small capitals folded to their
  letters, combining marks that decorate Latin letters removed (``d̲i̲s̲``), Unicode TR39
  confusables folded to Latin in every word that contains a Latin letter or consists only of
  look-alikes (``іgnore``, ``ѕуѕтем``) — the TR39 data comes from the maintained
  ``confusable-homoglyphs`` package, never from a hand list; whitespace collapsed;
- :func:`compact` — letters and digits only;
- :func:`unjoined` — words joined by anything that is not a letter read as words: every run of
  punctuation, symbols or blanks between two letters (``from-now-on``, ``forget.your.rules``,
  ``disregard_your``, U+2800 braille blank, U+3164 Hangul filler, any Unicode space) becomes
  one space, judged by the rules (not the secret detectors: a number's own dashes
  and dots are part of it); blank "letters" (the Hangul fillers, the braille blank) are spaces
  in every view;
- :func:`reading` — the text as a person reads it, for the meaning layer's embedding (which
  otherwise sees the raw text): blank letters as spaces, look-alikes from another script folded
  in words that mix them with Latin letters (case kept), and words chained by joiners instead
  of spaces split apart;
- :func:`alternate_views` — what obfuscation hides: letters spaced or dotted apart joined
  (``i g n o r e``, ``O.V.E.R``), leetspeak read (``1gn0r3``), rot13, payloads in base64,
  hex or percent-encoding decoded, and a text written backwards (whole or word by word) when
  it reads better so (:mod:`eros.guard.core.guard_backwards`). Each is judged by the same
  rules.

Only the judged views change; what is stored is the text minus its invisible characters.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import re
import unicodedata
from functools import lru_cache
from importlib import resources
from urllib.parse import unquote

from eros.core.text import strip_invisible
from eros.guard.core.guard_backwards import read_backwards
from eros.guard.core.guard_segment import read_reversed, read_words

_SPACE = re.compile(r"\s+")
_NOT_WORD = re.compile(r"[\W_]+")
# ASCII's control characters other than tab and newline (a \r is turned into \n first)
_WORD = re.compile(r"\w+")
_LATIN = re.compile(r"[a-z]")
_ASCII_LETTER = re.compile(r"[A-Za-z]")
# Look-alikes TR39 maps to a letter other than the one they are used for in attacks (its
# prototype for the Cyrillic palochka is "i"; in running text it stands for "l").
_SUPPLEMENT = {"ӏ": "l", "Ӏ": "l", "ǀ": "l", "ı": "i", "ɩ": "i", "ꞁ": "l"}
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s", "!": "i", "|": "l", "8": "b", "9": "g"})
_LEET_WORD = re.compile(r"[a-z0-9@$!|]*[a-z][a-z0-9@$!|]*")
#: a letter beside a digit or symbol of _LEET: in one word of _leet's (the only words it reads
#: differently), found by one search instead of a Python call per word
_LEET_MIXED = re.compile(r"[a-z][0-9@$!|]|[0-9@$!|][a-z]")
# three or more single letters separated by one space, dot, dash, underscore, star or middle dot
_SPACED = re.compile(r"(?<![^\W_])[^\W_](?:[ .\-_*·•/][^\W_]){2,}(?![^\W_])")
_SEPARATORS = re.compile(r"[ .\-_*·•/]")
_SPACED_WORDS = re.compile(r"(?<!\S)\S(?: \S){2,}(?!\S)")
_WIDE_GAP = re.compile(r"\s{2,}")
_LETTERS_APART = re.compile(r"\S(?: \S)*")
_SINGLE_SPACE = re.compile(r" ")
_B64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
# characters that render as blank but are letters or symbols to Unicode (so neither ``\s`` nor
# ``\W`` sees them): Hangul fillers (choseong, jungseong, compatibility, half-width), the
# braille blank, the Mongolian vowel separator
_BLANKS = str.maketrans({c: " " for c in "\u115f\u1160\u3164\uffa0\u2800\u180e"})
# ASCII fast path of unjoined(): a run of non-letters, not only spaces, no digits, between letters
_ASCII_JOIN = re.compile(r"(?<=[a-z])[^a-z0-9]*[^a-z0-9\s][^a-z0-9]*(?=[a-z])")
_HEX = re.compile(r"\b(?:[0-9a-fA-F]{2}){8,}\b")
# a word that mixes ASCII letters with digits inside it ("1gn0r3", "4ss1st4nt"): a digit
# between letters or before one; a trailing number ("covid19", "mp3") is no leet
_LEET_INSIDE = re.compile(r"\b[a-zA-Z0-9@$]*(?:[0-9@$][a-zA-Z]|[a-zA-Z][0-9@$]+[a-zA-Z])"
                          r"[a-zA-Z0-9@$]*\b")
# once a text is leetspeak, any word mixing letters and digits is read ("n0", "th3")
_LEET_ANY = re.compile(r"\b(?=[a-zA-Z0-9@$]*[a-zA-Z])(?=[a-zA-Z0-9@$]*[0-9@$])[a-zA-Z0-9@$]+\b")
#: a text is read as leetspeak when at least this many of its words are
MIN_LEET_WORDS = 2
_PERCENT = re.compile(r"%[0-9a-fA-F]{2}")


@lru_cache(maxsize=1)
def _skeleton_table() -> dict[int, str]:
    """Non-ASCII character → the ASCII letter or digit TR39 says it is confusable with
    (``confusable-homoglyphs``' copy of Unicode's confusables.txt), plus small capitals."""
    data = json.loads(resources.files("confusable_homoglyphs")
                      .joinpath("confusables.json").read_text(encoding="utf-8"))
    table: dict[int, str] = {}
    for char, glyphs in data.items():
        if len(char) != 1 or char.isascii():
            continue
        for glyph in glyphs:
            target = glyph.get("c", "")
            if len(target) == 1 and target.isascii() and target.isalnum():
                table[ord(char)] = target.lower()
                break
    for code in range(0x0250, 0xAB70):  # IPA, phonetic extensions, Latin extended-D
        name = unicodedata.name(chr(code), "")
        if name.startswith("LATIN LETTER SMALL CAPITAL ") and len(name) == 28:
            table[code] = name[-1].lower()
    for char, target in _SUPPLEMENT.items():
        table[ord(char)] = target
    return table


def _strip_latin_marks(text: str) -> str:
    """Combining marks that sit on an ASCII letter or digit (underlines, overlays, strokes)."""
    if text.isascii():
        return text
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch) and out and out[-1].isascii():
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def _fold_word(match: re.Match[str]) -> str:
    word = match.group(0)
    if word.isascii():
        return word
    folded = word.translate(_skeleton_table())
    # a word with a Latin letter in it, or made only of look-alikes, is read as Latin; a
    # Russian or Greek word stays itself (its own language's rules read it)
    if _LATIN.search(word) or folded.isascii():
        return folded
    return word


def ascii_digits(text: str) -> str:
    """Decimal digits of every script as ASCII digits ("٤٢" → "42", "१२" → "12")."""
    if text.isascii():
        return text
    return re.sub(r"\d", lambda m: str(unicodedata.decimal(m.group(0), 0)), text)


def normalise(text: str, *, stripped: bool = False) -> str:
    """The view the guard judges: invisible characters removed, NFKC (full-width folded),
    case-folded, digits of every script as ASCII digits, small capitals and TR39 confusables
    folded to Latin in Latin-looking words, combining marks on Latin letters removed,
    whitespace collapsed. ``stripped``: ``text`` is already :func:`strip_invisible`'s output
    (a pass per character over a non-ASCII text, not repeated)."""
    plain = text if stripped else strip_invisible(text)
    folded = unicodedata.normalize("NFKC", plain).casefold().translate(_BLANKS)
    # NFKC can itself produce format characters from compatibility forms; strip again
    folded = ascii_digits(_strip_latin_marks(strip_invisible(folded)))
    if not folded.isascii():
        folded = _WORD.sub(_fold_word, folded)
    return _SPACE.sub(" ", folded).strip()


def compact(normalised: str) -> str:
    """Letters and digits only (any script): "i-g-n-o-r-e" and "忽 略" read as one word."""
    return _NOT_WORD.sub("", normalised)


def _joiner(ch: str) -> bool:
    """Punctuation, a symbol or a separator: what may join words instead of a space."""
    return unicodedata.category(ch)[0] in "PSZ" or ch.isspace()


def unjoined(view: str) -> str | None:
    """``view`` (normalised) with every run of non-letter joiners between two letters read as
    one space ("from-now-on" → "from now on"; a letter may carry its marks), or None when
    nothing changes. Digits are no joiners ("covid-19" stays)."""
    if view.isascii():
        out = _ASCII_JOIN.sub(" ", view)
        return out if out != view else None
    chars: list[str] = []
    i, n, changed = 0, len(view), False
    while i < n:
        if not _joiner(view[i]):
            chars.append(view[i])
            i += 1
            continue
        k = i
        while k < n and _joiner(view[k]):
            k += 1
        run = view[i:k]
        if (run.strip() and chars and unicodedata.category(chars[-1])[0] in "LM"
                and k < n and view[k].isalpha()):
            chars.append(" ")
            changed = True
        else:
            chars.append(run)
        i = k
    return "".join(chars) if changed else None


# what may chain words instead of spaces for reading(): punctuation, symbols and separators,
# but not an apostrophe (l'amica, don't) nor sentence marks, which sit between letters in
# ordinary Chinese or Japanese prose (NFKC makes a full-width comma an ASCII one)
_NOT_CHAIN = set("'’‘`´,;:!?，。、；：！？・「」『』（）《》〈〉")
#: a text is read as chained when at least this many joins hold its words together and they
#: outnumber its spaces ("mother-in-law" in a sentence is not; "forget-your-rules-now" is)
MIN_CHAIN_JOINS = 3


def _chain(ch: str) -> bool:
    category = unicodedata.category(ch)
    # quotes and brackets (Pi, Pf, Ps, Pe) wrap words rather than chain them
    return (ch not in _NOT_CHAIN and not ch.isspace() and category[0] in "PSZ"
            and category not in ("Pi", "Pf", "Ps", "Pe"))


def _unchained(text: str) -> str:
    """``text`` with every run of chain characters between two letters read as one space,
    when such joins hold it together (see :data:`MIN_CHAIN_JOINS`); else ``text``."""
    out: list[str] = []
    joins, i, n = [], 0, len(text)
    while i < n:
        k = i
        while k < n and _chain(text[k]):
            k += 1
        if k == i:
            out.append(text[i])
            i += 1
            continue
        if out and out[-1].isalpha() and k < n and text[k].isalpha():
            joins.append(len(out))
        out.append(text[i:k])
        i = k
    if len(joins) < MIN_CHAIN_JOINS or len(joins) <= text.count(" "):
        return text
    for at in joins:
        out[at] = " "
    return "".join(out)


def _fold_mixed(match: re.Match[str]) -> str:
    """A word that mixes ASCII Latin letters with look-alikes from another script, folded
    to Latin with its case kept ("Аlwаys" → "Always"); any other word as it is."""
    word = match.group(0)
    if word.isascii() or not _ASCII_LETTER.search(word):
        return word
    table = _skeleton_table()
    chars = []
    for ch in word:
        target = table.get(ord(ch)) if not ch.isascii() else None
        if target is None or unicodedata.name(ch, "").startswith("LATIN"):
            chars.append(ch)
        else:
            chars.append(target.upper() if ch.isupper() else target)
    return "".join(chars)


def _read_leet(text: str) -> str:
    """``text`` with its leetspeak words read as letters, when at least
    :data:`MIN_LEET_WORDS` words have a digit inside or before a letter ("th3 4ss1st4nt
    1gn0r3s" → "the assistant ignores"); then every word mixing letters and digits is read."""
    if len(_LEET_INSIDE.findall(text)) < MIN_LEET_WORDS:
        return text
    return _LEET_ANY.sub(lambda m: m.group(0).translate(_LEET), text)


def reading(text: str) -> str | None:
    """What a person reads in ``text`` — blank letters as spaces, digits of every script as
    ASCII digits, look-alikes folded in words that mix scripts, leetspeak read, words chained
    by joiners ("Going-forward-answer-all", "ignore.your.rules", "x_y_z") split, letters
    spaced one apart and words glued together (their zero-width spaces stripped) read as words
    (:mod:`eros.guard.core.guard_segment`), a quoted span or a whole text written backwards
    or in rot13 read forwards (:mod:`eros.guard.core.guard_backwards`) — or None when that is
    the text itself. The meaning layer
    scores this beside the raw text: an embedding of a chained or disguised text is
    far from the instruction it spells."""
    plain = unicodedata.normalize("NFKC", strip_invisible(text))
    view = ascii_digits(plain.translate(_BLANKS))
    if not view.isascii():
        view = _WORD.sub(_fold_mixed, view)
    view = _SPACE.sub(" ", _unchained(_read_leet(view))).strip()
    view = read_words(view) or view
    # a payload in base64, hex or percent-encoding reads as what it decodes to, a quoted span
    # or a whole text written backwards or in rot13 as its words forwards
    view = " ".join([view, *decoded_payloads(plain), *read_backwards(plain),
                     *read_reversed(plain)])
    return view if view and view != _SPACE.sub(" ", plain).strip() else None


def _despaced(raw: str) -> str | None:
    """Letters spaced or dotted apart joined ("y o u  m u s t" → "you must"), or None. Where
    letters are spaced one apart, a wider gap separates words."""
    if not _SPACED.search(raw):
        return None
    if _SPACED_WORDS.search(raw):
        raw = " ".join(_SINGLE_SPACE.sub("", word) if _LETTERS_APART.fullmatch(word) else word
                       for word in _WIDE_GAP.split(raw))
    return _SPACED.sub(lambda m: _SEPARATORS.sub("", m.group(0)), raw)


def _leet(view: str) -> str | None:
    """Words that mix letters with digits or symbols read as letters ("1gn0r3" → "ignore")."""
    if _LEET_MIXED.search(view) is None:  # no word holds both: nothing to read
        return None
    changed = False

    def read(match: re.Match[str]) -> str:
        nonlocal changed
        word = match.group(0)
        if word.isalpha():
            return word
        changed = True
        return word.translate(_LEET)

    out = re.sub(r"[a-z0-9@$!|]+", lambda m: read(m) if _LEET_WORD.fullmatch(m.group(0))
                 else m.group(0), view)
    return out if changed else None


#: a decoded payload that is a number: its digits are for the secret checks
_NUMBER_PAYLOAD = re.compile(r"\d(?:[ .\-]?\d){8,}")


def _printable(data: bytes) -> str | None:
    """Decoded bytes that are text a person could read, or None."""
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _NUMBER_PAYLOAD.fullmatch(decoded):
        return decoded  # a number hidden as a payload (a card "encrypted" as base64)
    letters = sum(ch.isalpha() or ch.isspace() for ch in decoded)
    # a sentence has word gaps, unless its script writes none (Chinese, Japanese, Thai, …)
    gapless = sum(not ch.isascii() and ch.isalpha() for ch in decoded) >= 4
    if len(decoded) < 6 or letters < 0.7 * len(decoded) or not (
            " " in decoded.strip() or gapless):
        return None
    return decoded


def decoded_payloads(raw: str) -> list[str]:
    """Texts hidden in base64, hex or percent-encoding inside ``raw``, decoded."""
    out: list[str] = []
    for token in _B64.findall(raw):
        padded = token + "=" * (-len(token) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                text = _printable(decode(padded))
            except (binascii.Error, ValueError):
                continue
            if text:
                out.append(text)
                break
    for token in _HEX.findall(raw):
        text = _printable(bytes.fromhex(token))
        if text:
            out.append(text)
    if len(_PERCENT.findall(raw)) >= 3:
        out.append(unquote(raw))
    return out


#: a UUID (an order, a device, a session): no words hide in its hex, so no view reads it
UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
                  re.IGNORECASE)


def alternate_views(raw: str, view: str, stripped: str | None = None) -> list[str]:
    """Normalised views of what obfuscation hides in ``raw`` (``view`` is its normalised form,
    ``stripped`` its :func:`strip_invisible` form when known):
    spaced letters joined, leetspeak read, rot13 and decoded payloads. UUIDs are left out:
    read as leetspeak their hex spells words ("6ee74663-cccd-…" → "6eeta66e-cccd-…", an ID
    word beside a token, seen as a secret in 1 of ~20 drains of 1,024 sessions)."""
    masked, view = UUID.sub("uuid", raw), UUID.sub("uuid", view)
    if stripped is None or masked != raw:
        stripped = strip_invisible(masked)
    raw = masked
    views: list[str] = []
    despaced = _despaced(unicodedata.normalize("NFKC", stripped))
    if despaced is not None:
        views.append(normalise(despaced))
    leet = _leet(view)
    if leet is not None:
        views.append(leet)
    # letters spaced one apart (their word gaps folded away) and glued words read as words
    for candidate in (view, *views):
        words = read_words(candidate)
        if words is not None and words not in views:
            views.append(words)
    if _LATIN.search(view):
        views.append(codecs.encode(view, "rot13"))
    views.extend(normalise(p) for p in decoded_payloads(raw))
    # a text written backwards, whole or word by word, when it reads better so
    # (eros/guard/core/guard_backwards.py; its rot13 reading is the view above)
    views.extend(back for back in map(normalise, read_backwards(stripped)) if back not in views)
    return views
