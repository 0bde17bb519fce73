"""Secrets by their shape and their own checksum, whatever language is written around them
(issue 30, ninth round): held-out set 13 got identity numbers and passwords through in
languages whose word for them no list knew, so these checks read the value, not the word.

- identity numbers printed in a shape no other number has, validated by ``python-stdnum``:
  the South African ID (13 digits: a birth date, then Luhn), the Thai ID in its printed groups
  (1-4-5-2-1, mod 11), the Argentine CUIT/CUIL in its groups (2-8-1, mod 11, a known prefix),
  the Spanish DNI / NIE (8 digits, or X/Y/Z and 7, and a mod-23 check letter);
- a strong password by its shape alone: a token of 6–32 printable ASCII characters mixing an
  upper-case letter, a lower-case letter, a digit and a symbol ("Kiwi%842Lm"), however the
  sentence around it is written — no name, word, handle, file, address or link looks so (an
  underscore is no symbol here: gamer tags and network names join their words with it; nor
  are base64's + and =).

Since the nineteenth round: an IBAN by mod 97 at its country's registered length, whatever
its letters' and digits' places (:func:`iban_at_length`), and a card given in parts — its
security code (CVV, CVC) with its digits, or its number split into pieces beside a word for a
card (:func:`card_in_parts`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from stdnum import luhn, numdb
from stdnum.ar import cuit
from stdnum.es import dni, nie
from stdnum.iso7064 import mod_97_10
from stdnum.th import pin as th_pin
from stdnum.za import idnr

# a 13-digit run on its own (not part of a longer number, a dotted or dashed reference, a code)
_THIRTEEN = re.compile(r"(?<![\w\-./])\d{13}(?![\w\-/]|[.,]\d)")
_TH_GROUPS = re.compile(r"(?<![\d\-])\d-\d{4}-\d{5}-\d{2}-\d(?![\d\-])")
_AR_GROUPS = re.compile(r"(?<![\d\-])(?:20|23|24|27|30|33|34)-\d{8}-\d(?![\d\-])")
_ES_ID = re.compile(r"(?<![\w\-])(?:\d{8}|[XYZ]\d{7})-?[A-Z](?![\w\-])")
# a whitespace-bounded token (quotes and closing punctuation stripped before it is read)
_TOKEN = re.compile(r"(?<!\S)[!-~]{6,40}(?!\S)")
# an underscore alone joins a handle's or a network's words ("xX_N1ghtOwl_Xx"), and + and =
# are base64's own ("TW9jaGk="): none of them is a symbol here
_SYMBOLS = frozenset("!#$%&*?^~")


#: (where a number is printed, whether it passes its checksum, the kind it is)
Check = tuple[re.Pattern[str], Callable[[str], bool], str]


def first_valid(raw: str, checks: Sequence[Check]) -> str | None:
    """The kind of the first check (in order) whose shape in ``raw`` passes its checksum."""
    for pattern, is_valid, kind in checks:
        if any(is_valid(match.group(0)) for match in pattern.finditer(raw)):
            return kind
    return None


_BY_SHAPE: tuple[Check, ...] = (
    (_THIRTEEN, idnr.is_valid, "secret.za-id"),
    (_TH_GROUPS, th_pin.is_valid, "secret.th-id"),
    (_AR_GROUPS, cuit.is_valid, "secret.ar-cuit"),
    (_ES_ID, lambda n: (nie if n[0] in "XYZ" else dni).is_valid(n), "secret.es-dni"),
)


def identity_by_shape(raw: str) -> str | None:
    """The kind of an identity number printed in its own shape that passes its checksum."""
    return first_valid(raw, _BY_SHAPE)


def strong_password(raw: str) -> bool:
    """A token shaped as a strong password: upper, lower, digit and symbol in 6–32 characters,
    and neither a link, an address, a handle nor a tag."""
    for match in _TOKEN.finditer(raw):
        token = match.group(0).strip("\"'`([{<").rstrip("\"'`)]}>.,;:!?")
        if (not 6 <= len(token) <= 32 or "@" in token or "/" in token
                or token.startswith(("#", "$"))):  # a hashtag, a cashtag
            continue
        if (any(c.isupper() for c in token) and any(c.islower() for c in token)
                and any(c.isdigit() for c in token) and any(c in _SYMBOLS for c in token)):
            return True
    return False


# a BBAN's structure in the IBAN registry ("4!a13!c"): its places' counts
_PLACES = re.compile(r"(\d+)!")


def iban_at_length(number: str) -> bool:
    """``number`` (upper case, spaces allowed) passes mod 97 at its country's registered length,
    letters and digits in any place: a generator's or a hand-copied IBAN may put a digit where
    the bank code's letter goes, and mod 97 at the exact length passes one random number in 97."""
    compact = number.replace(" ", "")
    if not (compact[:2].isalpha() and compact[2:4].isdigit() and compact.isalnum()
            and compact.isascii()):
        return False
    info = numdb.get("iban").info(compact)
    structure = info[0][1].get("bban") if info and info[0][1] else None
    if not structure or sum(map(int, _PLACES.findall(structure))) != len(compact) - 4:
        return False
    return mod_97_10.is_valid(compact[4:] + compact[:4])


# a card's security code with its digits ("CVV 412", "CVC2: 0913", "CVV is 318")
_CVV = re.compile(r"(?<![A-Za-z])(?:cvv2?|cvc2?|cvn)(?![A-Za-z])(?:\W+(?:is|est|ist|es)\b)?"
                  r"\W{0,4}\d{3,4}(?!\d)", re.IGNORECASE)
# a piece of a number: two to four of them may be a card split apart
_PIECE = re.compile(r"(?<![\d.,])\d{4,10}(?![\d]|[.,]\d)")


def card_in_parts(raw: str, named: bool) -> bool:
    """A card's security code with its digits, or (``named``: a word for a card in the text)
    two to four pieces of digits that joined in order make a card number (13-19 digits, an
    issuer's first digit, Luhn)."""
    if _CVV.search(raw):
        return True
    if not named:
        return False
    pieces = _PIECE.findall(raw)
    for start in range(len(pieces)):
        for end in range(start + 2, min(start + 4, len(pieces)) + 1):
            digits = "".join(pieces[start:end])
            if 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn.is_valid(digits):
                return True
    return False
