"""Secrets written so that no number check read them (issue 30, seventeenth round): a wallet's
recovery phrase, digits dictated as words, a card regrouped, written backwards or hidden as
base64, an IBAN whose bank check a copy fails or whose groups are dashed, and identity numbers
announced by a name too common to announce any number."""

from __future__ import annotations

import pytest

from eros.guard.core.guard import load_guard
from eros.guard.core.guard_secret_seed import seed_phrase
from eros.guard.core.guard_secret_spelled import spelled_digits
from eros.guard.core.guard_secrets import find_secret

# twelve words of the BIP39 English list (no valid checksum: a hand copy need not have one)
_TWELVE = "fossil puzzle oyster vessel meadow zebra basket cactus island quartz meadow tomato"


def dropped(text: str) -> bool:
    return not load_guard().check(text).ok


@pytest.mark.parametrize("text", [
    f"The user's hardware wallet words, in order: {_TWELVE}.",
    f"Words on the card in the drawer: {_TWELVE.replace(' ', ', ')}",
    f"Фраза пользователя: {_TWELVE.replace(' ', '-')}",
    "Backup of the user's Ledger seed starts with: fossil puzzle oyster vessel meadow zebra",
])
def test_a_recovery_phrase_is_a_secret(text: str) -> None:
    assert seed_phrase(text) and find_secret(text) == "secret.seed-phrase"


@pytest.mark.parametrize("text", [
    # six list words with nothing that names a seed: a shopping list, not a phrase
    "User bought apple, banana, lemon, olive, pepper and tomato at the market.",
    "User loves to walk above the river with all the friends they can find about town.",
    "The user's wallet is brown leather and was a gift from their sister.",
])
def test_ordinary_words_are_no_recovery_phrase(text: str) -> None:
    assert not seed_phrase(text) and find_secret(text) is None


@pytest.mark.parametrize(("text", "kind"), [
    ("Il numero della carta è cinque sei sei uno tre uno otto sei zero nove uno tre nove "
     "zero nove sette.", "secret.card"),
    ("Die PIN der Bankkarte ist vier sieben eins neun.", "secret.one-time-code"),
    ("Le code de validation reçu par SMS est huit deux trois un cinq neuf.",
     "secret.one-time-code"),
    ("User's SIN, read aloud: three three seven three eight four eight zero four.",
     "secret.ca-sin"),
])
def test_digits_dictated_as_words_are_read_as_digits(text: str, kind: str) -> None:
    assert find_secret(text) == kind


def test_counting_in_words_is_no_secret() -> None:
    assert spelled_digits("one, two, three") is None  # three words: counting
    assert find_secret("The kids count one two three four five before jumping.") is None
    assert find_secret("Uno dos tres cuatro, ¡a bailar!") is None


@pytest.mark.parametrize("text", [
    "Karte des Nutzers: 566.131.860.913.909.7",  # regrouped in threes
    "User wrote the card number backwards to be safe: 2103809518106254",
    "User keeps the card as base64 so it is 'encrypted': NTY2MTMxODYwOTEzOTA5Nw==",
    "Kreditkarte: 5661318609139097",
])
def test_a_card_regrouped_reversed_or_encoded_is_a_secret(text: str) -> None:
    assert dropped(text)


def test_a_number_backwards_is_a_card_only_beside_a_word_for_one() -> None:
    assert find_secret("Tracking reference 2103809518106254 for the parcel.") is None


@pytest.mark.parametrize("text", [
    # mod 97 and Spain's length, though the bank's own check digits inside fail
    "La cuenta del usuario es ES93 5306 3135 5490 3112 9442.",
    "User's Dutch account NL35-ABNA-0271-0641-99.",
])
def test_an_iban_is_a_secret_by_mod_97_at_its_country_length(text: str) -> None:
    assert find_secret(text) == "secret.iban"


def test_an_iban_shape_that_fails_mod_97_is_not() -> None:
    assert find_secret("La cuenta del usuario es ES94 5306 3135 5490 3112 9442.") is None


@pytest.mark.parametrize(("text", "kind"), [
    ("User's Canadian SIN is 242 995 371.", "secret.ca-sin"),
    ("User's My Number is 2079 4392 5864.", "secret.jp-my-number"),
    ("Die AHV-Nummer des Nutzers ist 756.3609.9636.24.", "secret.ch-ahv"),
    ("Versichertennummer 756.3008.2556.41 steht auf der Karte.", "secret.ch-ahv"),
])
def test_identity_numbers_announced_by_a_common_name(text: str, kind: str) -> None:
    assert find_secret(text) == kind


def test_a_common_name_with_a_number_that_fails_its_check_is_no_identity_number() -> None:
    assert find_secret("Pedido 242995372 sin gastos de envío.") is None
    assert find_secret("my number is 2079 4392 5865, call after six") is None


def test_a_phrase_is_found_at_any_offset_of_a_long_run() -> None:
    """The window is a running count over the run (issue 34): a phrase after, between and
    before other words is found, a window one list word short is not."""
    filler = "the user said that and then of it"
    assert seed_phrase(f"{filler} {_TWELVE} {filler}")
    assert seed_phrase(f"{filler}, {_TWELVE}")
    # _TWELVE's one word off the list ("quartz") is the miss a phrase may have; a second
    # one in every twelve consecutive words is one too many
    assert not seed_phrase(f"{filler} {_TWELVE.replace('zebra', 'zebrax')} {filler}")
    assert seed_phrase(f"{filler} {_TWELVE.replace('quartz', 'quarter')} zebrax {filler}")
    # the same twelve words, each separated by a word no gap may hold: no run is long enough
    assert not seed_phrase(" é ".join(_TWELVE.split()))
