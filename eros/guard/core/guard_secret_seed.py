"""A wallet's recovery phrase (BIP39 mnemonic) is a secret (issue 30, seventeenth round).

A seed phrase has no checksum a writer keeps (a hand-copied or partly remembered phrase, a
generator that draws words at random, fails BIP39's own check), so it is read by its words:
every word of the phrase is one of the standard's 2,048 English words, taken from the
maintained ``mnemonic`` package (the reference implementation), never from a hand list.
Ordinary prose never strings a dozen of them together: the words English sentences are held
together by ("the", "and", "of", "to", "is", "a") are not among them.

- twelve or more consecutive list words (one word in twelve may be off the list: a typo, a
  generator's word) are a phrase, announced or not;
- six or more consecutive list words, all on the list, are a phrase where a word for a seed,
  a recovery phrase or a wallet (:data:`_SEED_WORD`, in the red-team sets' languages) is in
  the text: "the first six words of the wallet seed are …".
"""

from __future__ import annotations

import re
from functools import lru_cache

from eros.guard.core.guard_literals import CaseFreeStrings

#: the kind :func:`seed_phrase` reports
SEED_RULE = "secret.seed-phrase"
_WORD = re.compile(r"[A-Za-z]+")
# what may stand between two words of one phrase: blanks, commas, quotes, brackets, a list's
# numbering ("1. galaxy 2. tattoo"), dashes — never another word
_GAP_CHARS = r"[\s,;:\"'“”«»()\[\]{}/|\d.\-–—]"
_SEED_WORD = re.compile(
    r"seed|mnemonic|recovery (phrase|words?|sentence)|backup (phrase|words)|secret phrase|"
    r"wallet|сид|мнемон|фраз\w* восстановлен|кошел[её]к|гаманц|復元フレーズ|シード|ウォレット|"
    r"助记词|助記詞|钱包|錢包|시드|복구 (구문|문구)|지갑|semilla|frase de recupera|"
    r"phrase de (récupération|recuperation)|wiederherstellung|cartera|carteira|portefeuille|"
    r"portafoglio|portfel|cüzdan|ví",
    re.IGNORECASE)
#: its words found without the engine (an IGNORECASE alternation is searched at every position;
#: most texts hold none of its words: eros/guard/core/guard_literals.py)
_SEED_WORDS = CaseFreeStrings(_SEED_WORD)
#: a phrase announced or not; one announced by a seed word
_LONG, _SHORT = 12, 6
#: a run of consecutive words (two words with nothing but gap characters between them are one
#: run): found by the engine in one pass, not by a Python step per word
_RUN = re.compile(rf"[A-Za-z]+(?:{_GAP_CHARS}+[A-Za-z]+)*")
#: some run of :data:`_SHORT` words or more: most texts hold none, and no phrase then
_SHORT_RUN = re.compile(rf"[A-Za-z]+(?:{_GAP_CHARS}+[A-Za-z]+){{{_SHORT - 1}}}")


@lru_cache(maxsize=1)
def _wordlist() -> frozenset[str]:
    from mnemonic import Mnemonic

    return frozenset(Mnemonic("english").wordlist)


def _runs(raw: str) -> list[list[str]]:
    """The text's runs of consecutive Latin words (lower case), split wherever anything but a
    gap (:data:`_GAP_CHARS`) stands between two words."""
    return [_WORD.findall(match.group(0).lower()) for match in _RUN.finditer(raw)]


def _window(run: list[str], words: frozenset[str], size: int, misses: int) -> bool:
    """Whether some ``size`` consecutive words of ``run`` are on the list but ``misses``
    (a running count over the run: one step a word, not a sum a window)."""
    on = [w in words for w in run]
    need = size - misses
    if len(on) < size or sum(on) < need:
        return False
    count = sum(on[:size])
    for i in range(size, len(on) + 1):
        if count >= need:
            return True
        if i < len(on):
            count += on[i] - on[i - size]
    return False


def seed_phrase(raw: str) -> bool:
    """Whether ``raw`` holds a BIP39 recovery phrase (see the module's docstring)."""
    # the ASCII letters (a phrase's words are 3 letters or more), counted in C; then whether
    # any run is long enough to hold a phrase at all, before its words are looked up
    if sum(map(len, _WORD.findall(raw))) < 3 * _SHORT or _SHORT_RUN.search(raw) is None:
        return False
    words = _wordlist()
    announced = _SEED_WORDS.may_match(raw) and _SEED_WORD.search(raw) is not None
    for run in _runs(raw):
        if len(run) < (_SHORT if announced else _LONG):
            continue
        if _window(run, words, _LONG, 1) or (announced and _window(run, words, _SHORT, 0)):
            return True
    return False


__all__ = ["SEED_RULE", "seed_phrase"]
