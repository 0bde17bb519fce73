"""National identity numbers the older checks did not know (issue 30): unseen writers' sets got
a German Steuer-ID, a Dutch BSN, a Swedish personnummer and an Estonian isikukood through, so
every number is read here against the validators of ``python-stdnum``.

A checksum alone is no proof on a short number: a 9-11 digit checksum passes one random number
in 10 or 11, so an order number, a phone number or an ISBN would be lost. A number is therefore
a secret here only

- printed in a shape no other number has, or carrying enough structure that a random number
  almost never passes (a birth date *and* a checksum): the Norwegian fødselsnummer (date, two
  mod-11 digits), the Belgian national number unpunctuated (date, mod 97), the Estonian and
  Lithuanian personal code (sex/century digit, date, mod 11), the French NIR (sex, month, key
  97), the Italian codice fiscale (letters and digits in its own order, a check letter); the
  Swedish personnummer and the Danish CPR with their dash (date and Luhn, date and mod 11), the
  Brazilian CPF (529.982.247-25), the Dutch BSN (1112.22.333) and the German Steuer-ID
  (12 345 678 903) as they are printed; or
- announced: a run of digits that passes one of the validators of its length (the Steuer-ID,
  BSN, personnummer, CPR, Portuguese NIF, PESEL, CPF, TC kimlik, Israeli ID, Aadhaar, …) with
  a word for an identity number (:data:`ID_NAME`, in the text's language) within a sentence's
  reach before or after it — "123456782 is haar BSN".

The checks of earlier rounds live here too (:func:`checked_national_id`): the Finnish HETU
(date, century sign, mod-31 check character), the Romanian CNP (sex/century digit, date, county,
mod 11), the Hungarian személyi szám (:func:`hu_personal_id_valid`), and as printed the Belgian
national number (87.11.03-215.47) and the Chilean RUT (16.482.937-5).

Digits of other scripts are folded before (``fold_digits``) and single spaces, dots and hyphens
between digits are read through, as the card check does.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from stdnum.be import nn as be_nn
from stdnum.br import cpf
from stdnum.ca import sin
from stdnum.ch import ssn as ch_ssn
from stdnum.cl import rut
from stdnum.de import idnr
from stdnum.dk import cpr
from stdnum.ee import ik
from stdnum.fi import hetu
from stdnum.fr import nir
from stdnum.il import idnr as il_id
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.jp import in_ as jp_my_number
from stdnum.nl import bsn
from stdnum.no import fodselsnummer
from stdnum.pl import pesel
from stdnum.pt import nif
from stdnum.ro import cnp
from stdnum.se import personnummer
from stdnum.tr import tckimlik

from eros.guard.core.guard_secret_shapes import Check, first_valid
from eros.guard.core.guard_secret_words import ID_NAME, ID_NAMES

# a run of 9-17 digits on its own, single spaces, dots, hyphens or slashes between them (not
# after a "+": a phone number's country code; not glued to letters: a reference or a hash)
_RUN = re.compile(r"(?<![\w+\-./,])\d(?:[ .\-/+]?\d){8,16}(?!\w|[.\-/,+]\w)")
_GROUP = re.compile(r"\d+")
_SEPARATOR = re.compile(r"\D")
# the Italian codice fiscale: six letters, the year, the month letter, the day (+40 for a
# woman), the town, the check letter (digits may be replaced by letters for homonyms)
_CODICE_FISCALE = re.compile(r"(?<![\w\-])[A-Z]{6}[\dLMNP-V]{2}[A-EHLMPR-T][\dLMNP-V]{2}[A-Z]"
                             r"[\dLMNP-V]{3}[A-Z](?![\w\-])", re.IGNORECASE)
# Swedish YYMMDD-NNNN (a "+" after a hundredth birthday) or YYYYMMDD-NNNN; Danish DDMMYY-SSSS
_SE_PRINTED = re.compile(r"(?:\d{2})?\d{6}[-+]\d{4}")
_DK_PRINTED = re.compile(r"\d{6}-\d{4}")
_BR_PRINTED = re.compile(r"\d{3}\.\d{3}\.\d{3}-\d{2}")
_NL_PRINTED = re.compile(r"\d{4}\.\d{2}\.\d{3}")
_DE_PRINTED = re.compile(r"\d{2} \d{3} \d{3} \d{3}")
_HETU = re.compile(r"(?<![\w+\-])\d{6}[-+A-FU-Y]\d{3}[0-9A-FHJ-NPR-Y](?![\w])")
_CNP = re.compile(r"(?<![\d+\-])[1-9]\d{12}(?![\d\-])")
# 1-780514-3389, 1 780514 3389 or 17805143389 (not after "+": a phone number's country code)
_HU_ID = re.compile(r"(?<![\d+\-])[1-8](?:[ -]?\d{6}[ -]?\d{4})(?![\d\-])")
# written as they are printed: the Belgian national number (87.11.03-215.47) and the Chilean
# RUT (16.482.937-5), each then checked by its own checksum
_BE_NN = re.compile(r"(?<![\d.\-])\d{2}\.\d{2}\.\d{2}-\d{3}\.\d{2}(?![\d\-]|\.\d)")
_CL_RUT = re.compile(r"(?<![\d.\-])\d{1,2}\.\d{3}\.\d{3}-[\dkK](?![\w\-]|\.\d)")
#: how far from its number a word still announces it (a sentence's reach)
_BEFORE, _AFTER = 60, 60


def _digits(run: str) -> str:
    return "".join(_GROUP.findall(run))


def hu_personal_id_valid(number: str) -> bool:
    """A Hungarian personal identification number (személyi szám, 11 digits S YYMMDD NNN C):
    S 1-8 gives sex and century (1/2 and 7/8: 1900s, 3/4: 1800s, 5/6: from 2000), the date
    must exist, and C is the sum of the first ten digits weighted 1..10 (born before 1997)
    or 10..1 (born from 1997) modulo 11 (a remainder of 10 is never issued)."""
    import datetime

    digits = _digits(number)
    if len(digits) != 11 or digits[0] not in "12345678":
        return False
    century = {"3": 1800, "4": 1800, "5": 2000, "6": 2000}.get(digits[0], 1900)
    try:
        born = datetime.date(century + int(digits[1:3]), int(digits[3:5]), int(digits[5:7]))
    except ValueError:
        return False
    weights = range(1, 11) if born < datetime.date(1997, 1, 1) else range(10, 0, -1)
    remainder = sum(int(d) * w for d, w in zip(digits[:10], weights, strict=True)) % 11
    return remainder < 10 and remainder == int(digits[10])


#: the identity numbers :func:`checked_national_id` validates where their words need not be
_HETU_CHECK: tuple[Check, ...] = ((_HETU, hetu.is_valid, "secret.fi-hetu"),)
_NATIONAL_IDS: tuple[Check, ...] = (
    (_CNP, cnp.is_valid, "secret.ro-cnp"),
    (_HU_ID, hu_personal_id_valid, "secret.hu-personal-id"),
    (_BE_NN, be_nn.is_valid, "secret.be-national-number"),
    (_CL_RUT, rut.is_valid, "secret.cl-rut"),
)


def checked_national_id(raw: str) -> str | None:
    """A Finnish HETU, a Romanian CNP, a Hungarian personal ID, a Belgian national number or a
    Chilean RUT, printed as it is, that passes its checksum (the checks of earlier rounds)."""
    return first_valid(raw.upper(), _HETU_CHECK) or first_valid(raw, _NATIONAL_IDS)


def _dk_mod11(number: str) -> bool:
    """The CPR's mod-11 check (every number issued before 2007 passes it; later ones need not,
    so a dashed CPR without it is only a secret where it is announced)."""
    weights = (4, 3, 2, 7, 6, 5, 4, 3, 2, 1)
    return sum(int(d) * w for d, w in zip(number, weights, strict=True)) % 11 == 0


def _personal_code(number: str) -> bool:
    """An Estonian isikukood or a Lithuanian asmens kodas: 1-6 (sex and century), a date, a
    serial and a mod-11 check (Lithuania's 9 for numbers without a date is left out)."""
    return number[0] in "123456" and ik.is_valid(number)


def _nir(number: str) -> bool:
    """A French NIR: sex 1 or 2, then stdnum's month, department and key 97."""
    return number[0] in "12" and nir.is_valid(number)


#: (whether the whole run is printed as this number is, whether its digits pass, the kind)
_PRINTED: tuple[tuple[re.Pattern[str] | None, int, Callable[[str], bool], str], ...] = (
    (None, 11, fodselsnummer.is_valid, "secret.no-fodselsnummer"),
    (None, 11, be_nn.is_valid, "secret.be-national-number"),
    (None, 11, _personal_code, "secret.ee-lt-personal-code"),
    (None, 15, _nir, "secret.fr-nir"),
    (_SE_PRINTED, 0, personnummer.is_valid, "secret.se-personnummer"),
    (_DK_PRINTED, 10, lambda n: cpr.is_valid(n) and _dk_mod11(n), "secret.dk-cpr"),
    (_BR_PRINTED, 11, cpf.is_valid, "secret.br-cpf"),
    (_NL_PRINTED, 9, bsn.is_valid, "secret.nl-bsn"),
    (_DE_PRINTED, 11, idnr.is_valid, "secret.de-steuer-id"),
)


def _printed(run: str) -> str | None:
    """The kind of the identity number ``run`` is printed as (its shape and its checksum)."""
    number = _digits(run)
    groups = _GROUP.findall(run)
    # the whole run only when one separator groups it ("151086 95088"): digits that mixed
    # separators join ("version 12.0 08026838") are several numbers, not one, and two groups
    # joined by a dot are a decimal ("96121383.205"), which no identity number is printed as
    separators = _SEPARATOR.findall(run)
    whole = (number,) if len(set(separators)) <= 1 and separators != ["."] else ()
    for shape, length, is_valid, kind in _PRINTED:
        if shape is None:
            # the whole run, or one unbroken group of it ("født 15.10.86, 15108695088")
            if any(len(n) == length and is_valid(n) for n in (*whole, *groups)):
                return kind
        elif shape.fullmatch(run) and is_valid(run if length == 0 else number):
            return kind
    return None


#: the validators an announced number of each length is read against
_BY_LENGTH: dict[int, tuple[tuple[Callable[[str], bool], str], ...]] = {
    9: ((bsn.is_valid, "secret.nl-bsn"), (nif.is_valid, "secret.pt-nif"),
        (il_id.is_valid, "secret.il-id")),
    10: ((personnummer.is_valid, "secret.se-personnummer"), (cpr.is_valid, "secret.dk-cpr")),
    11: ((idnr.is_valid, "secret.de-steuer-id"), (pesel.is_valid, "secret.pl-pesel"),
         (cpf.is_valid, "secret.br-cpf"), (tckimlik.is_valid, "secret.tr-kimlik")),
    12: ((aadhaar.is_valid, "secret.in-aadhaar"), (personnummer.is_valid,
                                                  "secret.se-personnummer")),
}


def _announced(raw: str, run: re.Match[str]) -> str | None:
    """The kind of a number inside ``run`` (any of its consecutive digit groups) that passes a
    validator of its length, where a word for an identity number is within reach."""
    if not ID_NAME.search(raw, max(0, run.start() - _BEFORE), run.end() + _AFTER):
        return None
    groups = _GROUP.findall(run.group(0))
    for first in range(len(groups)):
        number = ""
        for group in groups[first:]:
            number += group
            if len(number) > 12:
                break
            for is_valid, kind in _BY_LENGTH.get(len(number), ()):
                if is_valid(number):
                    return kind
    return None


def printed_national_id(raw: str) -> str | None:
    """The kind of a national identity number in ``raw`` (digits folded to ASCII) printed in
    its own shape that passes its checksum."""
    for match in _CODICE_FISCALE.finditer(raw):
        if codicefiscale.is_valid(match.group(0).upper()):
            return "secret.it-codice-fiscale"
    for run in _RUN.finditer(raw):
        if (kind := _printed(run.group(0))) is not None:
            return kind
    return None


#: numbers announced by a name too common to announce any number ("sin" is Spanish for
#: "without", "my number" a phone's): each is read only against its own validator — the
#: Canadian SIN, the Japanese My Number, the Swiss AHV number (756.1234.5678.97)
_NAMED: tuple[tuple[re.Pattern[str], int, Callable[[str], bool], str], ...] = (
    (re.compile(r"\bsin\b|social insurance|assurance sociale|\bnas\b", re.IGNORECASE), 9,
     sin.is_valid, "secret.ca-sin"),
    (re.compile(r"\bmy ?number\b|マイナンバー|個人番号", re.IGNORECASE), 12, jp_my_number.is_valid,
     "secret.jp-my-number"),
    (re.compile(r"\b(?:ahv|avs|avh)\b|ahv-?n|sozialversicherungsn", re.IGNORECASE), 13,
     ch_ssn.is_valid, "secret.ch-ahv"),
)
# the AHV number as it is printed: 756, then 4, 4 and 2 digits joined by dots
_CH_AHV_PRINTED = re.compile(r"(?<![\d.])756\.\d{4}\.\d{4}\.\d{2}(?![\d]|\.\d)")


def _named(raw: str) -> str | None:
    """A number that passes the validator of a name within reach (:data:`_NAMED`)."""
    for match in _CH_AHV_PRINTED.finditer(raw):
        if ch_ssn.is_valid(match.group(0)):
            return "secret.ch-ahv"
    for name, length, is_valid, kind in _NAMED:
        for found in name.finditer(raw):
            window = raw[max(0, found.start() - _BEFORE):found.end() + _AFTER]
            if any(len(n) == length and is_valid(n)
                   for n in map(_digits, (r.group(0) for r in _RUN.finditer(window)))):
                return kind
    return None


def announced_national_id(raw: str) -> str | None:
    """The kind of a number in ``raw`` that passes a national checksum of its length with a
    word for an identity number within reach, before it or after it."""
    if (kind := _named(raw)) is not None:
        return kind
    if not ID_NAMES.may_match(raw):
        return None
    for run in _RUN.finditer(raw):
        if (kind := _announced(raw, run)) is not None:
            return kind
    return None


def national_id(raw: str) -> str | None:
    """Either: a national identity number printed in its shape, or announced."""
    return printed_national_id(raw) or announced_national_id(raw)
