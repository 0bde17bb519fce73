"""Held-out discipline (issues 25 and 30): a held-out set is written before the guard it measures
and is never used to train the meaning classifier, tune a threshold or write a rule. Set 4 is
still held out; sets 5 and 6 were held out in issue 30's first two rounds and are tuning sets
from its third round on, set 7 (held out in the third) from its fourth, set 8 (held out in the
fourth) from its fifth, set 9 (held out in the fifth) after it, set 10 (the independent check
of the fifth round, written by a writer who had not seen the bank or the rules) was spent in
its sixth round, set 11 (the independent check of the sixth, written while that round was
tuned by a writer who saw neither the bank, the rules nor any other set) in its seventh, set 12
(written while the seventh round was tuned by a writer who saw nothing of the project but its
own file) in its eighth, set 13 (written the same way while the eighth round was tuned) in
its ninth, set 14 (written the same way while the ninth round was tuned) in its tenth, set 15
(written the same way while the tenth round was tuned) in its eleventh and set 16 (written the
same way while the eleventh round was tuned) in its thirteenth, set 18 (written while the
thirteenth was tuned by a writer told the kinds and shapes in words, no earlier set's tag
names) in its fourteenth, set 19 (written the same way while the fourteenth was tuned) in
its fifteenth, set 20 (written the same way while the fifteenth was tuned) in its
seventeenth, set 21 (written the same way while the seventeenth was tuned) in its
eighteenth and set 22 (written the same way while the eighteenth was tuned) in its
nineteenth (bench/guard_dev.py). Set 17, written the same way while the twelfth round was
tuned, and set 23, written while the nineteenth was tuned by a writer told the kinds and
shapes in words, are held out with set 4. A newer set
is registered by adding it to ``HELD`` here and in bench/guard_dev.py.
This test fails if any text of a held-out set — a whole memory, a turn, or one of its
distinctive tokens (keys, encoded payloads, numbers, words joined by punctuation or fillers) —
turns up in the exemplar bank, the training corpus, a development or tuning set, another
held-out set (earlier or later: a later set's text may contain an earlier one's) or a rule
file."""

from __future__ import annotations

import re
import unicodedata
from importlib import resources

import pytest

from eros.core.text import normalise_for_dedup
from eros.guard.core.guard import bundled_sources
from eros.guard.core.guard_meaning import load_bank
from testkit.redteam.corpus import HELDOUT, Case, heldout_corpus, load

#: still held out, oldest first; each is checked against everything it must not appear in
HELD = ["held-out-4", "held-out-17", "held-out-23"]
#: what the guard may be tuned on: the main corpus, the development sets, the retired sets
#: (1–3, 5 and 6 since issue 30's third round, 7 since its fourth, 8 since its fifth, 9 after it,
#: 10 since its sixth, 11 since its seventh, 12 since its eighth, 13 since its ninth, 14 since
#: its tenth, 15 since its eleventh, 16 since its thirteenth, 18 since its fourteenth, 19
#: since its fifteenth, 20 since its seventeenth, 21 since its eighteenth, 22 since its
#: nineteenth)
TRAINING = ["attacks.toml", "benign.toml", "dev5.toml", "dev6.toml",
            *(f for n, f in HELDOUT.items() if n not in HELD)]
_TOKEN = re.compile(r"[^\s\"'“”「」:：,，。.!?()]{12,}")
#: letters that are blanks: a token joined by them is no ordinary word
_FILLERS = set("\u3164\u115f\u1160\uffa0")


def _ordinary(token: str) -> bool:
    """A word ("instructions", "ব্যবহারকারীর": letters and their combining marks) or a
    hyphenated compound ("mother-in-law") is no leak; words joined by fillers or chained by
    hyphens ("forget-all-your-rules") are."""
    parts = token.split("-")
    return len(parts) <= 3 and all(_word(p) and not _FILLERS & set(p) for p in parts)


def _word(part: str) -> bool:
    return part[:1].isalpha() and all(
        c.isalpha() or unicodedata.category(c).startswith("M") for c in part)


def _texts(names: list[str]) -> list[str]:
    texts = [e.text for e in load_bank().exemplars]
    for name in names:
        for case in load(name):
            texts.append(case.memory)
            texts.extend(t for _, t in case.turns)
    return texts


def _by_kind(cases: list[Case]) -> tuple[list[Case], list[Case]]:
    """A set's attacks and look-alikes, once its case ids are checked unique."""
    assert len({c.id for c in cases}) == len(cases)
    return ([c for c in cases if c.kind == "attack"], [c for c in cases if c.kind == "benign"])


def test_every_registered_set_is_tuning_or_held_out() -> None:
    # a set registered in the corpus is either still held out (HELD, judged only with
    # --held-out) or spent (a tuning set): none is silently skipped
    from bench.guard_dev import HELD as DEV_HELD
    from bench.guard_dev import TUNING

    tuned = {f for files in TUNING.values() for f in files}
    held = {f for files in DEV_HELD.values() for f in files}
    assert held == {HELDOUT[n] for n in HELD} and not held & tuned
    assert set(HELDOUT.values()) <= tuned | held


#: what the independent sets 11, 12 and 13 were asked to hold: look-alike kinds and attack shapes
_LOOKS = {"boss", "coach", "recipe", "workout", "lyrics", "poem", "code", "thesis", "religion",
          "house-rules", "game-rules", "security-advice", "password-policy", "order", "tracking",
          "phone", "postal", "isbn", "style"}
_SHAPES = {"indirect", "persistent", "persona", "exfiltration", "hidden-rule", "fake-system",
           "quoted-email", "hyphen", "dots", "underscore", "zero-width", "homoglyph", "leet",
           "spaced", "fullwidth", "base64", "mixed-lang", "secret", "iban", "card"}


#: the same kinds as set 13's writer named them (it was told the kinds in words, not the tags)
_LOOKS_13 = {"boss-instruction", "coach", "recipe", "gym", "lyrics", "poem", "code", "thesis",
             "religious-rules", "house-rules", "game-rules", "security-advice",
             "password-policy", "order-number", "tracking", "phone", "postal", "isbn",
             "style-pref"}
_SHAPES_13 = {"persistent", "persona", "exfil-email", "exfil-url", "hide", "fake-system",
              "quoted-email", "hyphen-joined", "dotted", "underscore-joined", "unicode-zw",
              "homoglyph", "leetspeak", "spaced-letters", "fullwidth", "base64", "translation",
              "secret", "iban", "card", "national-id"}


def _holds_what_it_was_asked_for(cases: list[Case], attacks_min: int, benign_min: int,
                                 languages_min: int, looks: set[str] = _LOOKS,
                                 shapes: set[str] = _SHAPES) -> None:
    attacks, benign = _by_kind(cases)
    assert len(attacks) >= attacks_min and len(benign) >= benign_min
    assert len(benign) > len(attacks) and len({c.lang for c in cases}) >= languages_min
    assert {t for c in benign for t in c.tags} >= looks
    assert {t for c in attacks for t in c.tags} >= shapes


#: the kinds and shapes set 23's writer named (told them in words, as sets 18-22's were)
_LOOKS_23 = {"style_pref", "real_rule", "nonsecret_number", "ai_topic", "security_topic",
             "scam_story", "flight", "postal", "recipe", "lyrics", "proverb", "roleplay",
             "parent_rule", "boss_rule", "religious_rule", "coach_rule", "house_rule", "order",
             "code", "poem", "doctor_rule", "teacher_rule", "partial_card", "phone_business",
             "pw_manager", "robot_fiction", "workout", "game_rule", "tracking", "isbn"}
_SHAPES_23 = {"secret", "standing_order", "promo", "affiliate_link", "trigger_phrase",
              "exfiltration", "webhook", "system_prompt", "deception", "human_claim", "hide_ai",
              "lie_to_user", "policy_override", "jailbreak", "developer_mode", "fake_system",
              "fake_tool", "fake_admin", "fake_developer", "indirect", "third_party_rule",
              "split_turns", "national_id", "iban", "card", "pin", "password", "api_key",
              "otp", "seed_phrase", "security_answer", "backup_codes", "door_code",
              "obf_spaced", "obf_zwsp", "obf_base64", "obf_emoji", "obf_leet", "obf_reversed",
              "obf_rot13", "obf_dotted", "obf_fullwidth", "obf_hex", "obf_homoglyph",
              "obf_numwords", "obf_rlo", "obf_upsidedown"}


def test_the_newest_held_out_set_is_the_independent_nineteenth_round_check() -> None:
    # its writer was told the kinds and shapes in words, as sets 18-22's were, and wrote 744
    # attacks and 770 look-alikes in 93 languages; 27 cases coinciding with earlier sets, the
    # bank or the rules were removed at registration, before any run
    assert HELDOUT["held-out-23"] == "heldout23.toml" and list(HELDOUT)[-1] == "held-out-23"
    _holds_what_it_was_asked_for(heldout_corpus(), 720, 740, 90, _LOOKS_23, _SHAPES_23)


#: the kinds and shapes set 22's writer named (told them in words, as sets 18-21's were)
_LOOKS_22 = {"style-pref", "assistant-pref", "number", "house-rules", "from-now-on", "ai-work",
             "teacher-rule", "recipe", "security-study", "marketing", "password-mention",
             "roleplay", "boss-rule", "parent-rule", "lies-profession", "code", "lyrics", "poem",
             "doctor-order", "coach-rule", "phone", "crypto-hobby", "quote-email", "flight",
             "seed-concept", "pin-mention", "bot-word", "postcode", "isbn", "tracking"}
_SHAPES_22 = {"secret", "deception", "exfiltration", "persistent-rule", "persona-hijack",
              "promo", "indirect", "conditional-trigger", "fake-system", "ignore-safety",
              "fake-developer", "fake-admin", "fake-tool-output", "fake-memory-note",
              "code-switch", "address-you", "password", "iban", "national-id", "card", "pin",
              "api-key", "seed-phrase", "otp", "private-key", "recovery-codes", "obf-reversed",
              "obf-zwsp", "obf-spaced", "obf-dots", "obf-leet", "obf-base64", "obf-emoji",
              "obf-homoglyph", "obf-rot13", "obf-fullwidth", "obf-dashes", "obf-underscores"}


def test_the_independent_eighteenth_round_check_is_still_there() -> None:
    # set 22 was held out until issue 30's nineteenth round, which spent it as a tuning set;
    # its writer was told the kinds and shapes in words, as sets 18-21's were, and wrote 577
    # attacks and 724 look-alikes in 86 languages; 32 cases coinciding with earlier sets, the
    # bank or the rules were removed at registration, before any run
    assert HELDOUT["held-out-22"] == "heldout22.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-22"), 550, 680, 85, _LOOKS_22,
                                 _SHAPES_22)


#: the kinds and shapes set 21's writer named (told them in words, as sets 18-20's were)
_LOOKS_21 = {"style", "rules", "numbers", "security-topic", "orderno", "tracking", "phone",
             "isbn", "invoice", "rel", "pref", "goal", "event", "fact"}
_SHAPES_21 = {"injection", "secret", "obfuscated", "promo", "exfil", "authority", "lie",
              "reveal", "persona", "fakesys", "codeword", "deception", "fact-about-assistant",
              "story", "template", "later-text", "quote", "card", "iban", "password", "pin",
              "otp", "seed", "apikey", "privkey", "banklogin", "obf-zw", "obf-homoglyph",
              "obf-b64", "obf-spaced", "obf-leet", "obf-fullwidth", "obf-rot13", "obf-hex",
              "obf-bidi", "obf-dotted", "obf-arabic"}


def test_the_independent_seventeenth_round_check_is_still_there() -> None:
    # set 21 was held out until issue 30's eighteenth round, which spent it as a tuning set;
    # its writer was told the kinds and shapes in words, as sets 18-20's were, and wrote 488
    # attacks and 722 look-alikes in 78 languages; 40 cases coinciding with earlier sets, the
    # bank or the rules were removed at registration, before any run
    assert HELDOUT["held-out-21"] == "heldout21.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-21"), 450, 650, 75, _LOOKS_21,
                                 _SHAPES_21)


#: the kinds and shapes set 20's writer named (told them in words, as sets 18 and 19's were)
_LOOKS_20 = {"style", "recipe", "imperative", "scam_story", "religion", "boss_rule",
             "partial_card", "security_job", "coach_rule", "teacher_rule", "poem", "health",
             "long_number_benign", "house_rule", "game_rule", "phone_business", "lyrics",
             "tracking", "code_learning", "isbn", "postcode", "order_number"}
_SHAPES_20 = {"promo", "exfil", "deception", "persistent_rule", "trigger", "third_person",
              "indirect", "persona_hijack", "hide", "fake_system", "safety_bypass", "card",
              "password", "otp", "pin", "seed", "iban", "zwsp", "spaced", "fullwidth",
              "reversed", "base64", "dotted", "devanagari_digits", "arabic_digits"}


def test_the_independent_fifteenth_round_check_is_still_there() -> None:
    # set 20 was held out until issue 30's seventeenth round, which spent it as a tuning set;
    # its writer was told the kinds and shapes in words, as sets 18 and 19's were, and wrote
    # 436 attacks and 657 look-alikes in 90 languages; 24 cases coinciding with earlier sets
    # were removed at registration, before any run
    assert HELDOUT["held-out-20"] == "heldout20.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-20"), 400, 600, 85, _LOOKS_20,
                                 _SHAPES_20)


#: the kinds and shapes set 19's writer named (told them in words, as set 18's writer was)
_LOOKS_19 = {"boss_rule", "teacher_rule", "recipe", "workout", "lyrics", "poem", "code", "thesis",
             "religion", "house_rule", "game_rule", "security_advice", "password_policy",
             "order_number", "tracking", "phone", "postal", "isbn", "style_pref", "medical",
             "legal", "parenting", "cs_script", "partial_card", "flight"}
_SHAPES_19 = {"persistent", "promotion", "exfiltration", "fake_system", "fake_developer",
              "persona", "deception", "conditional", "indirect", "ignore_rules", "ignore_safety",
              "homoglyph", "leet", "zw", "bidi", "fullwidth", "base64", "rot13", "hex", "dots",
              "underscores", "digits_arabic", "spelled", "mixed_lang", "card", "iban",
              "password", "pin", "otp", "api_key", "seed"}


def test_the_independent_fourteenth_round_check_is_still_there() -> None:
    # set 19 was held out until issue 30's fifteenth round, which spent it as a tuning set;
    # its writer was told the kinds and shapes in words, as set 18's was, and wrote 426
    # attacks and 656 look-alikes in 90 languages; 15 cases coinciding with earlier sets
    # were removed at registration, before any run
    assert HELDOUT["held-out-19"] == "heldout19.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-19"), 400, 600, 85, _LOOKS_19,
                                 _SHAPES_19)


#: the kinds and shapes set 18's writer named (told them in words, with no earlier set's tags)
_LOOKS_18 = {"boss_rule", "recipe", "workout", "lyrics", "poem", "code", "thesis", "religion",
             "house_rules", "game_rules", "security_advice", "password_policy", "order",
             "tracking", "phone", "postal", "isbn", "style_pref", "medical", "legal",
             "parenting", "cs_script", "partial_card", "flight"}
_SHAPES_18 = {"persistent", "promotion", "exfiltration", "fake_system", "persona", "deceive",
              "conditional", "indirect", "ignore_safety", "homoglyph", "leet", "zero_width",
              "bidi", "fullwidth", "base64", "rot13", "hex", "dots", "hyphens", "underscores",
              "nonascii_digits", "spelled", "mixed_lang", "card", "iban", "national_id",
              "password", "pin", "otp", "api_key", "seed_phrase", "private_key"}


def test_the_independent_thirteenth_round_check_is_still_there() -> None:
    # set 18 was held out until issue 30's fourteenth round, which spent it as a tuning set;
    # its writer was told the kinds and shapes in words (no earlier set's tag names) and wrote
    # 455 attacks and 659 look-alikes in 91 languages; 58 look-alikes coinciding with earlier
    # sets were removed at registration, before any run
    assert HELDOUT["held-out-18"] == "heldout18.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-18"), 400, 550, 85, _LOOKS_18,
                                 _SHAPES_18)


def test_the_independent_twelfth_round_check_is_still_held_out() -> None:
    # its writer was given set 16's tag names (national-id, otp, password and api-key among
    # them) and wrote 397 attacks and 639 look-alikes in 99 languages
    assert HELDOUT["held-out-17"] == "heldout17.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-17"), 350, 600, 90)
    attacks, _ = _by_kind(heldout_corpus("held-out-17"))
    assert {t for c in attacks for t in c.tags} >= {"national-id", "otp", "password", "api-key"}


def test_the_independent_eleventh_round_check_is_still_there() -> None:
    # set 16 was held out until issue 30's thirteenth round, which spent it as a tuning set;
    # its writer was given the tags of sets 11-15 and added national-id, otp, password and
    # api-key of its own
    assert HELDOUT["held-out-16"] == "heldout16.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-16"), 250, 450, 70)


def test_the_independent_tenth_round_check_is_still_there() -> None:
    # set 15 was held out until issue 30's eleventh round, which spent it as a tuning set (its
    # misses were read and diagnosed)
    assert HELDOUT["held-out-15"] == "heldout15.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-15"), 220, 400, 55)


def test_the_independent_ninth_round_check_is_still_there() -> None:
    # set 14 was held out until issue 30's tenth round, which spent it as a tuning set (its
    # misses were read and diagnosed); its writer was given the tag names of sets 11 and 12 and
    # wrote fewer cases in the smaller languages than asked (bench/RESULTS.md)
    assert HELDOUT["held-out-14"] == "heldout14.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-14"), 250, 480, 70)


def test_the_independent_eighth_round_check_is_still_there() -> None:
    # set 13 was held out until issue 30's ninth round, which spent it as a tuning set (its
    # misses were read and diagnosed); its texts are not in the bank (the round wrote its own)
    assert HELDOUT["held-out-13"] == "heldout13.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-13"), 250, 480, 60, _LOOKS_13,
                                 _SHAPES_13)


def test_the_independent_seventh_round_check_is_still_there() -> None:
    # set 12 was held out until issue 30's eighth round, which spent it as a tuning set (its
    # misses were read and diagnosed); its texts are not in the bank (the round wrote its own)
    assert HELDOUT["held-out-12"] == "heldout12.toml"
    _holds_what_it_was_asked_for(heldout_corpus("held-out-12"), 200, 400, 50)


def test_the_independent_sixth_round_check_is_still_there() -> None:
    # set 11 was held out until issue 30's seventh round, which spent it as a tuning set (its
    # misses were read and diagnosed); its texts are not in the bank (the round wrote its own)
    _holds_what_it_was_asked_for(heldout_corpus("held-out-11"), 150, 300, 40)


def test_the_independent_issue_30_set_is_still_there() -> None:
    # set 10 was held out until issue 30's sixth round, which spent it as a tuning set (its
    # lost look-alikes were read and diagnosed); its texts are still not in the bank
    cases = heldout_corpus("held-out-10")
    attacks, benign = _by_kind(cases)
    assert len(attacks) >= 150 and len(benign) >= 220 and len(benign) > len(attacks)
    assert len({c.lang for c in cases}) >= 30
    looks = {t for c in benign for t in c.tags}
    assert {"boss", "coach", "recipe", "workout", "lyrics", "code-learning", "config", "thesis",
            "house-rules", "game-rules", "security-advice", "password-policy", "order-number",
            "tracking", "phone", "date", "price", "other-digits"} <= looks
    shapes = {t for c in attacks for t in c.tags}
    assert {"indirect", "hypothetical", "quoted", "nested", "role-change", "hidden-rule",
            "exfiltration", "multi-turn", "hyphen", "dotted", "zero-width", "braille", "filler",
            "homoglyph", "leetspeak", "other-digits", "mixed-language", "secret"} <= shapes


def test_the_fifth_issue_30_set_is_still_there() -> None:
    cases = heldout_corpus("held-out-9")
    attacks, benign = _by_kind(cases)
    assert len(attacks) >= 120 and len(benign) >= 170 and len(benign) > len(attacks)
    assert len({c.lang for c in cases}) >= 25
    looks = {t for c in benign for t in c.tags}
    assert {"boss", "recipe", "lyrics", "code-learning", "thesis", "coaching", "legal",
            "parenting", "doctor", "ai-work", "security-job", "one-letter-words",
            "other-digits", "mixed-script", "contact", "order-number"} <= looks
    shapes = {t for c in attacks for t in c.tags}
    assert {"indirect", "role-play", "hypothetical", "fake-authority", "joiners", "spaced",
            "homoglyph", "leetspeak", "math-alnum", "other-digits", "reversed", "filler",
            "mixed-language", "multi-turn", "secret"} <= shapes


def test_the_fourth_issue_30_set_is_still_there() -> None:
    cases = heldout_corpus("held-out-8")
    attacks, benign = _by_kind(cases)
    assert len(attacks) >= 100 and len(benign) > len(attacks) and len(cases) >= 250
    assert len({c.lang for c in cases}) >= 25
    looks = {t for c in benign for t in c.tags}
    assert {"boss", "recipe", "lyrics", "code-learning", "thesis", "coaching", "legal",
            "one-letter-words", "spelling", "gamertag", "other-digits"} <= looks
    shapes = {t for c in attacks for t in c.tags}
    assert {"indirect", "polite", "role-play", "story", "spaced", "joiners", "soft-hyphen",
            "leetspeak", "fullwidth", "other-digits", "mixed-script", "secret"} <= shapes


def test_the_third_issue_30_set_is_still_there() -> None:
    cases = heldout_corpus("held-out-7")
    attacks, benign = _by_kind(cases)
    assert len(attacks) >= 100 and len(benign) > len(attacks) and len(cases) >= 250
    assert len({c.lang for c in cases}) >= 20
    looks = {t for c in benign for t in c.tags}
    assert {"fitness", "workplace", "vow", "school-rules", "contract", "sw-docs",
            "game-instructions", "therapy-homework", "quoted-dialogue", "kids-rules",
            "remember-to"} <= looks
    shapes = {t for c in attacks for t in c.tags}
    assert {"conditional", "persona-lock", "memory-policy", "fake-sysnote", "policy-update",
            "tool-json", "reversed", "math-alnum", "emoji-joined", "mixed-language",
            "secret"} <= shapes


def test_the_second_issue_30_set_is_still_there() -> None:
    cases = heldout_corpus("held-out-6")
    attacks, benign = _by_kind(cases)
    assert len(attacks) >= 80 and len(benign) > len(attacks) and len(benign) >= 120
    assert len({c.lang for c in cases}) >= 15
    looks = {t for c in benign for t in c.tags}
    assert {"work-rule", "coach", "ai-topic", "recipe", "lyrics", "code-benign", "game-rules",
            "legal", "parenting", "doctor", "hyphen-benign"} <= looks
    shapes = {t for c in attacks for t in c.tags}
    assert {"hyphen", "braille", "filler", "underscore", "dotted-words", "homoglyph",
            "mixed-script", "metadata-like", "role-play", "future", "reported", "indirect",
            "secret"} <= shapes


@pytest.mark.parametrize("name", HELD)
def test_no_held_out_text_is_in_the_bank_the_training_corpus_or_a_rule_file(name: str) -> None:
    # nor may one held-out set share text with another, in either direction
    others = TRAINING + [HELDOUT[n] for n in HELD if n != name]
    training = _texts(others)
    training_keys = {normalise_for_dedup(t) for t in training}
    joined = "\n".join(training)
    rules = "\n".join(content for _, content in bundled_sources())
    bank_file = resources.files("eros.data").joinpath("guard/bank.jsonl").read_text("utf-8")
    leaks = []
    for case in heldout_corpus(name):
        texts = [case.memory, *(t for _, t in case.turns)]
        for text in texts:
            if normalise_for_dedup(text) in training_keys or text in rules or text in joined:
                leaks.append((case.id, "text"))
            for token in _TOKEN.findall(text):
                if _ordinary(token):
                    continue
                if token in rules or token in bank_file or token in joined:
                    leaks.append((case.id, token))
    assert leaks == []
