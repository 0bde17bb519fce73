"""Secrets read by their shape and checksum in any language (eros/guard/core/guard_secret_shapes.py)
and the banking loanwords ATM and PIN in each script (guard_secret_words.py), issue 30's ninth
round; and the look-alikes those checks must keep."""

from __future__ import annotations

import pytest

from eros.guard.core.guard_secret_shapes import identity_by_shape, strong_password
from eros.guard.core.guard_secrets import find_secret


@pytest.mark.parametrize(("text", "kind"), [
    ("Haar ID is 9004155123089 volgens die kaart.", "secret.za-id"),
    ("Numero: 9004155123089", "secret.za-id"),
    ("หมายเลข 3-1005-01234-56-3 ของเธอ", "secret.th-id"),
    ("Su CUIL es 27-31864022-5.", "secret.ar-cuit"),
    ("Nortasun agiria 51742096P da.", "secret.es-dni"),
    ("Documento X1234567L, renovado.", "secret.es-dni"),
])
def test_identity_numbers_by_shape_and_checksum(text: str, kind: str) -> None:
    assert identity_by_shape(text) == kind
    assert find_secret(text) == kind


@pytest.mark.parametrize("text", [
    "Order 9004155123088 shipped on Monday.",  # 13 digits, Luhn fails
    "ISBN 9780306406157 is on her shelf.",  # no birth date
    "Tracking 1-1234-12345-12-0 arrived.",  # the Thai groups, the check fails
    "Invoice 51742096Q for the garage.",  # the DNI shape with the wrong letter
    "Flight AB1234X to Lisbon.",
])
def test_numbers_of_other_shapes_or_failing_checksums_are_no_identity(text: str) -> None:
    assert identity_by_shape(text) is None


@pytest.mark.parametrize("text", [
    "Ihr Bankzugang: Tulpe#5581Rx",
    "Ô mật mã ngân hàng là Moss&913Ka.",
    "بانکی تێپەڕوشەی River!27Qa",
])
def test_a_strong_password_by_its_shape_in_any_language(text: str) -> None:
    assert strong_password(text)
    assert find_secret(text) == "secret.password"


@pytest.mark.parametrize("text", [
    "Her gamer tag is Dark_W0lf_88.",  # underscores join a handle's words
    "Email her at Anna.K1@example.org.",
    "The file is Report_Q3-2024.pdf.",
    "Rated 5/5 on C++ and C#.",
    "Uses the hashtag #Run2024 on Instagram.",
    "Her cat's name in base64 is TW9jaGk=.",  # a tag: its # is no password's symbol
])
def test_handles_addresses_files_and_tags_are_no_password(text: str) -> None:
    assert not strong_password(text)


@pytest.mark.parametrize("text", [
    "ਉਸਦਾ ਏਟੀਐਮ ਪਿੰਨ ੪੮੧੭ ਹੈ।",  # Gurmukhi digits, folded
    "ఆమె ఏటీఎం పిన్ 7364.",
    "ଏହାର ଏଟିଏମ ପିନ 5912।",
    "اس کا اے ٹی ایم پن ۸۳۰۲ ہے",
    "ລະຫັດ ATM ຂອງລາວ 4471",
    "លេខកូដ ATM គឺ 9038",
    "Kod BLIK na zakupy: 602913.",
])
def test_atm_and_pin_loanwords_announce_a_code(text: str) -> None:
    assert find_secret(text) == "secret.one-time-code", text


@pytest.mark.parametrize("text", [
    "Withdrew 5000 rupees from the ATM near the station.",
    "ଭୁବନେଶ୍ୱର ପିନ 751001 ରେ ରହନ୍ତି।",  # India's PIN is a postcode
    "The ATM on 4th street charges 3500 dong a withdrawal.",
])
def test_an_atm_amount_or_an_indian_postcode_is_no_code(text: str) -> None:
    assert find_secret(text) is None, text


@pytest.mark.parametrize("text", [
    "Her social insurance number is 046 454 286.",
    "His tax file number is 123 456 782.",
    "Her NI number is AB123456C.",
])
def test_identity_numbers_named_in_english(text: str) -> None:
    assert find_secret(text) in ("secret.id-number", "secret.gb-nino"), text
