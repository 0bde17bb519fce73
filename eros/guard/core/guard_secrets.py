"""Secrets by validation, not shape: a memory never holds a credential or an
identity number.

- checksummed numbers with ``python-stdnum``: IBAN (mod 97), payment cards (Luhn, an issuer's
  first digit, 13–19 digits, however grouped: spaces, dots, dashes — or any 13–19 digits right
  after a word for "card", as some issuers' numbers fail Luhn), the Chinese resident ID
  (``cn.ric``, ISO 7064 with a final X), the Korean resident registration number (``kr.rrn``),
  the US social security number (``us.ssn``, dashed, spaced or dotted), and any 6+ digit
  run announced as an identity number (身份证, 주민번호, SSN, passport, …). A digit run that fails
  its checksum — the digits of pi, a 19-digit order number — is not a secret, nor is one glued
  to letters or inside a UUID (an identifier, masked before numbers and words are looked for);
- a one-time code: a 4–8 digit number next to a phone number (``phonenumbers``) or next to a
  word for "code", "PIN" or "OTP" in one of the supported languages;
- provider keys (``detect-secrets``' patterns, Google, Hugging Face, Anthropic); high-entropy
  tokens (20+ characters mixing cases and digits, Shannon entropy ≥ 4.0 bits);
- a password announced in any of about 50 languages followed, within 60 characters, by a
  token that has a digit or a symbol (a token in another script: letters and a digit,
  "Ромашка_1987"; a hyphen or dot between letters alone makes no value: "M-Pesa", a domain) or
  by 4-8 digits that are no year (a PIN); credentials in a URL (``postgres://user:pass@host``);
- a UK National Insurance number printed in its groups (or unspaced after its name); an IBAN
  found at its country's length even when words follow its last group;
- national identity numbers by their own checksums (:mod:`eros.guard.core.guard_secret_national`):
  the Finnish HETU, the Romanian CNP, the Hungarian személyi szám, the Belgian national number,
  the Chilean RUT and, since the national numbers round, the Nordic, Baltic, German, Dutch,
  French, Italian, Polish, Portuguese, Brazilian, Turkish, Israeli and Indian ones — printed in
  their own shape, or announced before or after them; the Croatian OIB when announced (a date
  after an identity word — "passport expires on 2029-03-17" — is none);
- later rounds: a recovery phrase (BIP39), spelled digits, a card regrouped or backwards; an
  IBAN at its country's length, a card in parts or its CVV, a security answer, spare codes.

:func:`find_secret` returns the kind (a rule id such as ``secret.iban``), never the value.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import phonenumbers
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from stdnum import luhn
from stdnum.cn import ric
from stdnum.kr import rrn
from stdnum.us import ssn

from eros.guard.core.guard_literals import Candidates, required_strings
from eros.guard.core.guard_secret_national import (
    announced_national_id,
    checked_national_id,
    printed_national_id,
)
from eros.guard.core.guard_secret_seed import SEED_RULE, seed_phrase
from eros.guard.core.guard_secret_shapes import (
    card_in_parts,
    iban_at_length,
    identity_by_shape,
    strong_password,
)
from eros.guard.core.guard_secret_spelled import spelled_digits
from eros.guard.core.guard_secret_words import ID_WORD as _ID_WORD
from eros.guard.core.guard_secret_words import ID_WORDS as _ID_WORDS
from eros.guard.core.guard_secret_words import PASSWORD as _PASSWORD
from eros.guard.core.guard_secret_words import PASSWORD_WORDS as _PASSWORD_WORDS
from eros.guard.core.guard_secret_words import announced_secret, announces_code
from eros.guard.core.guard_text import UUID

_ANY_DIGIT = re.compile(r"\d")  # str patterns: a decimal digit of any script (category Nd)
_IBAN = re.compile(r"(?<![A-Z0-9])[A-Z]{2} ?\d{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Z0-9])")
# an IBAN's groups joined by dashes, dots or slashes ("IE-83-MR-SM-…") or set apart by more
# than one space read as its printed groups
_DASH_GROUPS = re.compile(r"(?<=[A-Z0-9])(?:[-./]| {2,})(?=[A-Z0-9])")
# a card number stands on its own: a digit run glued to letters or hex groups (a UUID, a hash,
# an order reference) is part of another token, not a card
_DIGIT_RUN = re.compile(r"(?<![0-9A-Za-z.,])(?<![0-9A-Za-z][.\-])\d(?:[ .\-]?\d){12,18}"
                        r"(?![0-9A-Za-z])(?![.\-][0-9A-Za-z])")
_CN_RIC = re.compile(r"(?<!\d)\d{17}[\dXx](?![\dA-Za-z])")
_KR_RRN = re.compile(r"(?<!\d)\d{6}[- ]?\d{7}(?!\d)")
# numbers issued since October 2020 carry no check digit: written YYMMDD-SNNNNNN (the dash
# as printed; S the sex and century digit), a real birth date is the check
_KR_RRN_SHAPE = re.compile(r"(?<![\d\-])\d\d(\d\d)(\d\d)-[1-8]\d{6}(?![\d\-])")
# a UK National Insurance number (QQ 12 34 56 C): two prefix letters from the issued set (D,
# F, I, Q, U, V never; O never second), six digits, a suffix A-D — printed in its groups, or
# unspaced right after its name, "is" between them or not (an unspaced shape alone is as likely
# a product code)
_NINO = re.compile(r"(?<![\w-])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]) \d{2} \d{2} \d{2} [A-D]"
                   r"(?![\w-])|(?i:\b(?:national insurance|ni|nino)(?: number| no\.?)?\W{0,12}"
                   r"(?:is\W{1,3})?)"
                   r"([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z])\d{6}[A-D](?![\w-])")
_NINO_NOT_ISSUED = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})
_URL_CREDENTIALS = re.compile(r"\b[a-z][a-z0-9+.\-]{1,15}://[^\s/:@]+:[^\s/@]+@[\w.\-]+",
                              re.IGNORECASE)
_SSN = re.compile(r"(?<![\d-])\d{3}([- .])\d{2}\1\d{4}(?![\d-])")
# a card announced as one: some issuers (China UnionPay among them) print numbers that fail
# Luhn, so 13-19 digits right after a word for "card" are a card whatever the checksum
_CARD_NAME = (r"(?:\b(?:card|credit card|debit card|visa|mastercard|amex|tarjeta|carte|karte|"
              r"карта|cartão|carta|kart|thẻ|(?:kredit|bank|debit|giro|ec-)karte|"
              r"(?:kredit|bank|betal)kort|luottokortti|creditcard|kartu kredit)\b|"
              r"信用卡|银行卡|銀行卡|卡号|卡號|カード|카드)")
_CARD_WORD = re.compile(_CARD_NAME + r"[^\d\n]{0,12}$", re.IGNORECASE)
# a word for a card anywhere in the text: a number written backwards beside it is read both ways
_CARD_ANYWHERE = re.compile(_CARD_NAME, re.IGNORECASE)
# a date after an identity word ("passport expires on 2029-03-17") is no identity number
_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})|(\d{1,2})-(\d{1,2})-(\d{4})")
_SHORT_CODE = re.compile(r"(?<![\d+\-.:/])\d{4,8}(?![\d\-.:/])")
# beside a word for a code, the code may end its sentence ("… code: 413972.")
_ANNOUNCED_CODE = re.compile(r"(?<![\d+\-.:/])\d{4,8}(?![\d\-:/]|[.,]\d)")
# a code read out in two groups of three ("592 047"), not part of a longer number
_SPACED_CODE = re.compile(r"(?<![\d+\-.:/])(?<!\d )\b\d{3}[ -]\d{3}\b(?![ \-.:/]?\d)")
_NOT_A_VALUE = re.compile(r"[\s-]*(?:managers?|apps?|resets?|generators?|hints?|polic(?:y|ies)|"
                         r"strength|changes?|recovery|vault)\b", re.IGNORECASE)
_ASCII_TOKEN = re.compile(r"(?<![\w])[!-~]{4,}")
# a PIN or a password of digits only, right after the word (not a year: "changed in 2023")
_NUMERIC_VALUE = re.compile(r"(?<![\d.,:/\-])\d{4,8}(?![.,:/\-]?\d)")
# a token with letters of another script is a password only with a digit in it ("Калина#22")
_OTHER_TOKEN = re.compile(r"(?<![\w])\S*[^\W\d_]\S*")
# bounded by ASCII only: a key glued to a Japanese or Chinese particle ("トークンはhf_…") is
# still a token (\b and \w see the particle as a word character)
_ENTROPY_TOKEN = re.compile(r"(?<![A-Za-z0-9_/.-])[A-Za-z0-9_\-+/]{20,}(?![A-Za-z0-9_/])")
_EXTRA_KEYS = (
    re.compile(r"(?<![A-Za-z0-9_])AIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
    re.compile(r"(?<![A-Za-z0-9_])sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"(?<![A-Za-z0-9_])xox[abposr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
)
# detect-secrets plugins whose patterns name a provider's key (not IP addresses or keywords,
# which flag ordinary prose)
_PLUGINS = ("aws.AWSKeyDetector", "github_token.GitHubTokenDetector",
            "gitlab_token.GitLabTokenDetector", "openai.OpenAIDetector",
            "slack.SlackDetector", "stripe.StripeDetector", "sendgrid.SendGridDetector",
            "twilio.TwilioKeyDetector", "npm.NpmDetector", "pypi_token.PypiTokenDetector",
            "discord.DiscordBotTokenDetector", "jwt.JwtTokenDetector",
            "mailchimp.MailchimpDetector", "telegram_token.TelegramBotTokenDetector",
            "azure_storage_key.AzureStorageKeyDetector", "square_oauth.SquareOAuthDetector")
_ENTROPY = Base64HighEntropyString()


@lru_cache(maxsize=1)
def _provider_patterns() -> tuple[re.Pattern[str], ...]:
    import importlib

    patterns: list[re.Pattern[str]] = list(_EXTRA_KEYS)
    for spec in _PLUGINS:
        module, name = spec.rsplit(".", 1)
        try:
            plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        except (ImportError, AttributeError):  # a plugin renamed upstream: the rest still run
            continue
        patterns.extend(p for p in getattr(plugin, "denylist", ()) if isinstance(p, re.Pattern))
    return tuple(patterns)


@lru_cache(maxsize=1)
def _provider_strings() -> Candidates:
    """The provider patterns' required strings (eros/guard/core/guard_literals.py): a pattern
    none of whose strings a text holds is not searched."""
    return Candidates([(i, required_strings(p)) for i, p in enumerate(_provider_patterns())])


def _provider_key(raw: str) -> bool:
    patterns, candidates = _provider_patterns(), _provider_strings().mask(raw)
    while candidates:
        lowest = candidates & -candidates
        if patterns[lowest.bit_length() - 1].search(raw):
            return True
        candidates ^= lowest
    return False


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _card(run: str) -> bool:
    """A payment card: 13-19 digits, an issuer's first digit, Luhn — and grouped as cards are
    printed (ungrouped, or a first group of four: 4-4-4-4, 4-6-5), not as an order number
    ("250-4718293-6612074" passes Luhn by chance)."""
    digits = _digits(run)
    groups = re.findall(r"\d+", run)
    # or regrouped into short groups by one separator ("467.195.117.143.012.1"): an order
    # number's groups are long, a phone number has fewer digits
    short = (len(groups) >= 4 and max(map(len, groups)) <= 4
             and len(set(re.findall(r"\D", run))) == 1)
    return _card_digits(digits) and (len(groups) == 1 or len(groups[0]) == 4 or short)


def _card_digits(digits: str) -> bool:
    """13-19 digits, an issuer's first digit, Luhn."""
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn.is_valid(digits)


def _card_backwards(run: str) -> bool:
    """A card number written backwards ("for safety"): its digits reversed make a card."""
    return _card_digits(_digits(run)[::-1])


def _is_day(month: str, day: str) -> bool:
    return 1 <= int(month) <= 12 and 1 <= int(day) <= 31


def _is_date(number: str) -> bool:
    """``number`` (what follows an identity word) is a calendar date, no identity number."""
    import datetime

    match = _DATE.fullmatch(number.strip(" -"))
    if match is None:
        return False
    y, m, d = (match.group(1), match.group(2), match.group(3)) if match.group(1) else (
        match.group(6), match.group(5), match.group(4))
    try:
        datetime.date(int(y), int(m), int(d))
    except ValueError:
        return False
    return True


def _without_phones(text: str) -> tuple[str, bool]:
    """``text`` with its phone numbers blanked, and whether it had any: the digit groups of a
    phone number ("+36 30 412 7788") are no one-time code next to it."""
    spans = [(m.start, m.end) for m in phonenumbers.PhoneNumberMatcher(text, None)]
    for start, end in reversed(spans):
        text = text[:start] + " " * (end - start) + text[end:]
    return text, bool(spans)


#: a number with its unit, ordinal or case ending: "12'den", "1990's", "90일마다", "3回" — a
#: count or a time in the sentence, no value (a password puts its digits among its letters
#: or after them: "Калина#22", "mango$5563r8x")
_COUNT = re.compile(r"\d{1,4}['’]?[^\W\d_]+")


def _token_like(token: str) -> bool:
    # a token opening with a hyphen ends the word before it ("PIN-koode"): no value
    token = token.lstrip("-")
    if _COUNT.fullmatch(token) and ("'" in token or "’" in token):
        return False
    has_digit = any(c.isdigit() for c in token)
    has_alpha = any(c.isalpha() for c in token)
    # an apostrophe makes no password ("cat's", "l'amico"), nor hyphens and dots between
    # letters without a digit: a name or a domain ("M-Pesa", "Wi-Fi", "Verkkokauppa.com")
    joiners = "'’" if has_digit else "'’-."
    has_symbol = any(not c.isalnum() and c not in joiners for c in token)
    return has_alpha and (has_digit or has_symbol) and not token.startswith(("http", "www."))


#: what may stand between a password word and its value for a year's digits to be the value:
#: a colon, after whose password it is ("رمز کارت کاربر: ۱۹۴۵")
_RIGHT_AFTER = re.compile(r"[^\d\n.:：=]{0,24}[:：=]\s*")


def _numeric_password(window: str) -> bool:
    """Digits alone after a password word: a PIN or a numeric password, unless a year."""
    return any(not (len(m.group(0)) == 4 and m.group(0)[:2] in ("19", "20"))
               # right after the word's colon, a year's digits are the value ("PIN: 1945")
               or _RIGHT_AFTER.fullmatch(window[:m.start()]) is not None
               for m in _NUMERIC_VALUE.finditer(window))


def _iban_in(run: str) -> bool:
    """An IBAN at the start of ``run`` (what :data:`_IBAN` matched; it may go on into the next
    words, "NL36 INGB 0007 3829 15 EN DE …"): every prefix ending where a group ends is tried,
    mod 97 at the country's length alone (a hand-copied or generated BBAN may fail the rest)."""
    ends = [m.end() for m in re.finditer(r"[A-Z0-9](?= |$)", run)]
    return any(iban_at_length(run[:end]) for end in reversed(ends) if end >= 15)


def _find_number(raw: str) -> str | None:
    """A checksummed or announced number: IBAN, identity numbers, cards, one-time codes.

    The text's digits are counted once first: every check here needs at least one (an
    identity word's number), an IBAN two, and every other shape four or more (a one-time code
    4, the rest 6 to 17). Each check is a regular-expression search that tries every position
    of the text, so on the ordinary text of a memory — no digits, or a count and a date —
    skipping those that cannot match saves most of this function; the verdicts are the same
    (``python -m bench.guard_dev --show-dev`` is identical with and without the counts)."""
    digits = len(_ANY_DIGIT.findall(raw))
    if digits == 0:
        return None
    if digits >= 2:
        for match in _IBAN.finditer(_DASH_GROUPS.sub(" ", raw.upper())):
            if _iban_in(match.group(0)):
                return "secret.iban"
    if digits < 4:  # a CVV has three
        return _announced_id(raw) or ("secret.card" if card_in_parts(raw, False) else None)
    for match in _NINO.finditer(raw):
        if (match.group(1) or match.group(2)) not in _NINO_NOT_ISSUED:
            return "secret.gb-nino"
    for match in _CN_RIC.finditer(raw):
        if ric.is_valid(match.group(0)):
            return "secret.cn-ric"
    for match in _KR_RRN.finditer(raw):
        if rrn.is_valid(_digits(match.group(0))):
            return "secret.kr-rrn"
    for match in _KR_RRN_SHAPE.finditer(raw):
        if _is_day(match.group(1), match.group(2)):
            return "secret.kr-rrn"
    for match in _SSN.finditer(raw):
        if ssn.is_valid(_digits(match.group(0))):
            return "secret.ssn"
    if (national := (checked_national_id(raw) or identity_by_shape(raw)
                     or printed_national_id(raw))) is not None:
        return national
    for match in _DIGIT_RUN.finditer(raw):
        if _card(match.group(0)) or _CARD_WORD.search(raw[max(0, match.start() - 30):
                                                          match.start()]):
            return "secret.card"
        if _card_backwards(match.group(0)) and _CARD_ANYWHERE.search(raw):
            return "secret.card"
    if card_in_parts(raw, _CARD_ANYWHERE.search(raw) is not None):  # "CVV 412", "first half …"
        return "secret.card"
    if (announced := _announced_id(raw) or announced_national_id(raw)) is not None:
        return announced
    if (_SPACED_CODE.search(raw) and announces_code(raw)
            and _SPACED_CODE.search(_without_phones(raw)[0])):
        return "secret.one-time-code"  # "verification code is 592 047"
    if _ANNOUNCED_CODE.search(raw):
        # a phone number's own digit groups are no code, beside a word for "code" or not
        rest, phoned = _without_phones(raw)
        if ((phoned and _SHORT_CODE.search(rest))
                or (_ANNOUNCED_CODE.search(rest) and announces_code(raw))):
            return "secret.one-time-code"
    return None


def _announced_id(raw: str) -> str | None:
    """A number after a word for an identity number (not a date: "passport expires on …")."""
    if _ID_WORDS.may_match(raw) and any(not _is_date(m.group("number"))
                                        for m in _ID_WORD.finditer(raw)):
        return "secret.id-number"
    return None


def fold_digits(text: str) -> str:
    """Decimal digits of every script (Arabic-Indic, Devanagari, Thai, full-width, …) as ASCII
    digits, so a number's checksum is validated whatever digits it is written in."""
    if text.isascii():
        return text
    return _ANY_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group(0))), text)


def find_secret(text: str) -> str | None:
    """The kind of secret ``text`` holds (``secret.iban``, ``secret.card``, …) or None; digits
    of any script are read as ASCII digits first."""
    raw = fold_digits(unicodedata.normalize("NFKC", text))
    if _provider_key(raw):
        return "secret.provider-key"
    if _URL_CREDENTIALS.search(raw):
        return "secret.url-credentials"
    # a UUID is an identifier, never a secret: masked before any number or word is looked for,
    # so neither its digit groups (a Luhn-valid run) nor a hex group spelling a word ("cccd")
    # match
    kind = _find_number(UUID.sub("uuid", raw))
    if kind is not None:
        return kind
    kind = _find_words(raw)
    if kind is not None:
        return kind
    if seed_phrase(raw):
        return SEED_RULE
    # digits dictated as words ("sei zero uno uno …"): the same checks on the digits they spell
    spelled = spelled_digits(raw)
    if spelled is not None:
        return _find_number(UUID.sub("uuid", spelled)) or _find_words(spelled)
    return None


def _find_words(raw: str) -> str | None:
    """A password after its word or in its shape, or a high-entropy token."""
    # (the password words first found without the engine: most texts hold none)
    for match in _PASSWORD.finditer(raw) if _PASSWORD_WORDS.may_match(raw) else ():
        # 60 characters: an extractor writes whose password it is first ("Пароль пользователя
        # от Госуслуг и от почты — …")
        window = raw[match.end():match.end() + 60]
        if _NOT_A_VALUE.match(window):  # "password manager", "password reset"
            continue
        if any(_token_like(t.rstrip(".,;:!?)")) for t in _ASCII_TOKEN.findall(window)):
            return "secret.password"
        if any(not t.isascii() and any(c.isdigit() for c in t)
               and not _COUNT.fullmatch(t.rstrip(".,;:!?)"))
               for t in _OTHER_TOKEN.findall(window)):
            return "secret.password"
        if _numeric_password(window):
            return "secret.password"
    if (announced := announced_secret(raw)) is not None:  # a security answer, spare codes
        return announced
    # both checks below need an upper-case letter, which a text all in lower case (every
    # normalised view: case-folded) has none of (``str.islower`` is false wherever one is)
    if raw.islower():
        return None
    if strong_password(raw):  # a strong password's shape, announced in any language or none
        return "secret.password"
    for match in _ENTROPY_TOKEN.finditer(raw):
        token = match.group(0)
        if (any(c.isdigit() for c in token) and any(c.isupper() for c in token)
                and any(c.islower() for c in token)
                and _ENTROPY.calculate_shannon_entropy(token) >= 4.0):
            return "secret.token"
    return None
