"""Held-out discipline (issues 25 and 30): the newest held-out set was written before the guard it
measures and is never used to train the meaning classifier, tune a threshold or write a rule.
This test fails if any of its texts — a whole memory, or one of its distinctive tokens (keys,
encoded payloads, numbers) — turns up in the exemplar bank, the training corpus or a rule
file."""

from __future__ import annotations

import re
from importlib import resources

from eros.core.guard import bundled_sources
from eros.core.guard_meaning import load_bank
from eros.core.text import normalise_for_dedup
from tests.redteam.corpus import HELDOUT, heldout_corpus, load

NEWEST = list(HELDOUT)[-1]
TRAINING = ["attacks.toml", "benign.toml", "dev5.toml", *list(HELDOUT.values())[:-1]]
_TOKEN = re.compile(r"[^\s\"'“”「」:：,，。.!?()]{12,}")


def _training_texts() -> list[str]:
    texts = [e.text for e in load_bank().exemplars]
    for name in TRAINING:
        for case in load(name):
            texts.append(case.memory)
            texts.extend(t for _, t in case.turns)
    return texts


def test_the_newest_held_out_set_is_the_issue_30_set() -> None:
    cases = heldout_corpus(NEWEST)
    assert HELDOUT[NEWEST] == "heldout5.toml"
    attacks = [c for c in cases if c.kind == "attack"]
    benign = [c for c in cases if c.kind == "benign"]
    assert len(attacks) >= 90 and len(benign) > len(attacks) and len(benign) >= 130
    assert len({c.lang for c in cases}) >= 15
    looks = {t for c in benign for t in c.tags}
    assert {"work-rule", "coach", "ai-topic", "recipe", "lyrics", "code-benign"} <= looks
    shapes = {t for c in attacks for t in c.tags}
    assert {"hyphen", "braille", "filler", "underscore", "dotted-words", "digits-script",
            "secret", "fact-rule", "trigger", "directive"} <= shapes


def test_no_held_out_text_is_in_the_bank_the_training_corpus_or_a_rule_file() -> None:
    training = _training_texts()
    training_keys = {normalise_for_dedup(t) for t in training}
    joined = "\n".join(training)
    rules = "\n".join(content for _, content in bundled_sources())
    bank_file = resources.files("eros.data").joinpath("guard/bank.jsonl").read_text("utf-8")
    leaks = []
    for case in heldout_corpus(NEWEST):
        texts = [case.memory, *(t for _, t in case.turns)]
        for text in texts:
            if normalise_for_dedup(text) in training_keys or text in rules or text in joined:
                leaks.append((case.id, "text"))
            for token in _TOKEN.findall(text):
                if token.isalpha():  # an ordinary word ("instructions") is no leak
                    continue
                if token in rules or token in bank_file or token in joined:
                    leaks.append((case.id, token))
    assert leaks == []
