"""Digits written out as words are still digits (issue 30, seventeenth round).

A card, a tax number, a PIN or a one-time code dictated digit by digit ("sei zero uno uno …",
"drei sechs acht sechs drei vier") passed every check that reads numbers. :func:`spelled_digits`
reads each run of four or more digit words — one digit a word, in the languages the red-team
sets are written in — as the digits it spells, the rest of the text unchanged, so the secret
checks judge "la carta è 6011017358137618" and the code announced before it as they would
judge the digits. A run of fewer than four words is counting, not dictation ("one, two,
three"), and a run is one only where nothing but blanks, commas and dashes stands between its
words.
"""

from __future__ import annotations

import re
import unicodedata

#: one word a digit, by language (lower case, accents folded)
_DIGITS: dict[str, tuple[str, ...]] = {
    "en": ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"),
    "es": ("cero", "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve"),
    "it": ("zero", "uno", "due", "tre", "quattro", "cinque", "sei", "sette", "otto", "nove"),
    "pt": ("zero", "um", "dois", "tres", "quatro", "cinco", "seis", "sete", "oito", "nove"),
    "fr": ("zero", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf"),
    "de": ("null", "eins", "zwei", "drei", "vier", "funf", "sechs", "sieben", "acht", "neun"),
    "nl": ("nul", "een", "twee", "drie", "vier", "vijf", "zes", "zeven", "acht", "negen"),
    "pl": ("zero", "jeden", "dwa", "trzy", "cztery", "piec", "szesc", "siedem", "osiem",
           "dziewiec"),
    "ru": ("ноль", "один", "два", "три", "четыре", "пять", "шесть", "семь", "восемь",
           "девять"),
    "uk": ("нуль", "один", "два", "три", "чотири", "пять", "шість", "сім", "вісім", "девять"),
    "tr": ("sifir", "bir", "iki", "uc", "dort", "bes", "alti", "yedi", "sekiz", "dokuz"),
    "sv": ("noll", "ett", "tva", "tre", "fyra", "fem", "sex", "sju", "atta", "nio"),
}
_VALUE = {w: str(d) for words in _DIGITS.values() for d, w in enumerate(words)}
# "zwo" for "zwei" on the telephone, "oh" is left out (an English interjection)
_VALUE["zwo"] = "2"
_WORDS = "|".join(sorted(_VALUE, key=len, reverse=True))
_RUN = re.compile(rf"(?<!\w)(?:{_WORDS})(?:[\s,\-]+(?:{_WORDS})){{3,}}(?!\w)")
_GAPS = re.compile(r"[\s,\-]+")
_MARKS = re.compile(r"[\u0300-\u036f]")
# the Chinese digits, one character each, read the same way (四位以上: "六零一一…")
_HAN = str.maketrans("零〇一二三四五六七八九", "00123456789")
_HAN_RUN = re.compile(r"[零〇一二三四五六七八九]{6,}")


def _folded(text: str) -> str:
    """Lower case, accents folded (the word list is written without them: "três", "fünf",
    "sześć", "dört" and the dotless "altı" are read as "tres", "funf", "szesc", "dort",
    "alti")."""
    return unicodedata.normalize(
        "NFC", _MARKS.sub("", unicodedata.normalize("NFD", text.lower()))).replace("ı", "i")


def spelled_digits(raw: str) -> str | None:
    """``raw`` with each run of spelled digits read as digits, or None when it has none."""
    folded = _folded(raw)
    found = False
    if _HAN_RUN.search(folded):
        folded = _HAN_RUN.sub(lambda m: m.group(0).translate(_HAN), folded)
        found = True
    if _RUN.search(folded):
        folded = _RUN.sub(lambda m: "".join(_VALUE[w] for w in _GAPS.split(m.group(0))),
                          folded)
        found = True
    return folded if found else None


__all__ = ["spelled_digits"]
