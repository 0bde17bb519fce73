"""The memory guard: no text that addresses the AI, impersonates a role or holds a secret is kept.

A memory is recalled into the companion's *system* prompt, so a memory that reads like an
instruction ("from now on you must …", ``<|im_start|>system``, "### new rules") would be a
prompt injection promoted from the user role to the system role, persistent across sessions.
The guard is the last check before a text becomes a memory: every extracted candidate and every
canonical text consolidation writes passes through :meth:`Guard.check`.

It judges a *normalised* view (:mod:`eros.guard.core.guard_text`: NFKC, invisible characters
removed,
a ``\r`` read as a line break, case-folded, small capitals, combining marks and TR39
confusables folded, blank letters read as spaces), the same view with words joined by
non-letters read as words (``from-now-on``, ``forget.your.rules``), a *compact* view of it
(letters and digits only), and the alternate views
of what obfuscation hides (letters spaced apart joined, leetspeak, rot13, base64 / hex /
percent-encoded payloads decoded). The rules are data: TOML files shipped in
``eros/guard/patterns`` plus any ``*.toml`` in the directory ops name
(``MEMORY_GUARD_PATTERNS_DIR``); see docs/security.md for the format. Secrets are found by
validation (:mod:`eros.guard.core.guard_secrets`). The meaning layer needs the candidate's embedding
and runs after it (:mod:`eros.guard.services.guard_model`), so ``check()`` is the rules-and-secrets
part of the guard; ``eros guard check`` gives the whole decision.

Verdicts carry a reason code and a rule id, never the text, so they can be counted and logged.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

from eros.core.text import strip_invisible
from eros.guard.core.guard_directive import DIRECTIVE_RULE, directs_assistant, ordinary_style
from eros.guard.core.guard_literals import Candidates, any_of, required_strings
from eros.guard.core.guard_secrets import find_secret
from eros.guard.core.guard_speech import mentions_masked, quotes_someone_else
from eros.guard.core.guard_text import alternate_views, compact, normalise, unjoined

View = Literal["text", "compact"]
#: the reason codes a rule may carry (``too_long`` is the length cap's own; ``instruction`` is
#: the meaning classifier's, eros/guard/core/guard_meaning.py; ``unverified`` is a text held back
#: because the LLM second opinion asked about it gave no usable answer).
REASONS = ("addresses_ai", "role_impersonation", "persona_claim", "secret", "too_long",
           "instruction", "unverified")
#: the layers a verdict names: which check dropped the text (``eros guard check`` prints it).
LAYERS = ("length", "rules", "secrets", "meaning", "llm")
#: default cap on a memory's length in characters (``MEMORY_GUARD_MAX_CHARS``).
DEFAULT_MAX_CHARS = 300

__all__ = ["KEEP", "LAYERS", "REASONS", "Guard", "PatternError", "Rule", "Screened",
           "Verdict", "build_guard", "compact", "load_guard", "normalise", "scalar_text",
           "screen"]


@dataclass(frozen=True)
class Rule:
    """One pattern of a patterns file."""

    id: str
    reason: str
    pattern: re.Pattern[str]
    view: View = "text"
    #: finds any of the strings one of which every match contains (None: unknown): a text
    #: where it finds none is not searched (eros/guard/core/guard_literals.py; the verdicts
    #: are the same)
    needs: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    #: those strings themselves (None: unknown), for :class:`RuleIndex`
    strings: frozenset[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        strings = required_strings(self.pattern)
        object.__setattr__(self, "strings", strings)
        object.__setattr__(self, "needs", any_of(strings))


class RuleIndex:
    """The rules' strings per view (:class:`Candidates`), built once for a rules tuple and
    carried over by ``dataclasses.replace`` (the classify path makes a guard with another
    length cap for every session's turns)."""

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules
        self.text = Candidates([(i, r.strings) for i, r in enumerate(rules) if r.view == "text"])
        self.compact = Candidates([(i, r.strings) for i, r in enumerate(rules)
                                   if r.view == "compact"])
        #: every rule but those for orders to the assistant (quoted speech skips those)
        self.not_ai = sum(1 << i for i, r in enumerate(rules) if r.reason != "addresses_ai")


@dataclass(frozen=True)
class Verdict:
    """Whether a text may be kept; ``reason`` and ``rule`` name what dropped it (no text)."""

    ok: bool
    reason: str | None = None
    rule: str | None = None
    #: which layer decided: one of :data:`LAYERS`, None for a kept text.
    layer: str | None = None


KEEP = Verdict(True)
#: the rules that read an order's form alone ("the assistant must …", "reply only in …", "from
#: now on …"): a memory's ordinary style wish in that form is left to the meaning layer
STYLE_ORDER_RULES = frozenset({"en.ai-must", "en.reply-only", "en.from-now-on", "en.you-must"})


class PatternError(ValueError):
    """A patterns file that cannot be used; the message names the file and the rule."""


@dataclass(frozen=True)
class Guard:
    """Compiled rules plus the length cap; pure and cheap to share between threads."""

    rules: tuple[Rule, ...]
    max_chars: int = DEFAULT_MAX_CHARS
    sources: tuple[str, ...] = ()
    #: built from ``rules`` when not given or built for other rules
    index: RuleIndex | None = field(default=None, repr=False, compare=False)
    #: refuse a memory that directs the assistant beyond an ordinary style preference
    #: (:mod:`eros.guard.core.guard_directive`); off for a user's turn, which addresses the
    #: companion by nature
    directives: bool = True

    def __post_init__(self) -> None:
        if self.index is None or self.index.rules is not self.rules:
            object.__setattr__(self, "index", RuleIndex(self.rules))

    def check(self, text: str) -> Verdict:
        """Keep or drop one memory text by its length, the rules and the secret detectors
        (the meaning classifier runs later, on the candidate's embedding)."""
        clean = strip_invisible(text)  # once: every view below starts from it
        view = normalise(clean, stripped=True)
        if len(view) > self.max_chars:
            return Verdict(False, "too_long", "max_chars", "length")
        # a quoted phrase named as an example of a kind ("phrases such as '…'"): every rule but
        # those for orders to the assistant reads the whole text, those read it without the
        # phrase (eros/guard/core/guard_speech.py)
        masked = mentions_masked(text)
        if masked is not None:
            verdict = self._check(text, view, skip_ai=True, clean=clean)
            return verdict if not verdict.ok else self._check(masked, normalise(masked))
        return self._check(text, view, clean=clean)

    def _check(self, text: str, view: str, skip_ai: bool = False,
               clean: str | None = None) -> Verdict:
        # someone else's words quoted (a boss's "from now on you must…", a lyric): the rules for
        # orders to the assistant leave them to the meaning layer (eros/guard/core/guard_speech.py)
        quoted = skip_ai or quotes_someone_else(view)
        joined = unjoined(view)  # "from-now-on", "forget.your.rules" read as words
        for reading in (view, joined):
            if reading is None:
                continue
            verdict, wish = self._rules(reading, quoted)
            if wish:  # a style wish: the orders' rules leave every later view to the meaning layer
                quoted = skip_ai = True
            if verdict is not None:
                return verdict
        if self.directives and not quoted and (
                directs_assistant(view) or (joined is not None and directs_assistant(joined))):
            return Verdict(False, "addresses_ai", DIRECTIVE_RULE, "rules")
        if clean is None:
            clean = strip_invisible(text)
        secret = find_secret(clean)
        if secret is not None:
            return Verdict(False, "secret", secret, "secrets")
        for alternate in alternate_views(text, view, clean):
            verdict = self._match(alternate, skip_ai) or self._secret(alternate)
            if verdict is not None:
                return verdict
        return KEEP

    def _match(self, view: str, quoted: bool = False) -> Verdict | None:
        index = self.index
        assert index is not None  # set by __post_init__
        packed = compact(view)
        # the rules that could match, in order: those whose strings are found in their view
        # (a rule none of whose strings is there cannot match it)
        candidates = index.text.mask(view) | index.compact.mask(packed)
        if quoted:
            candidates &= index.not_ai
        rules = self.rules
        while candidates:
            lowest = candidates & -candidates
            rule = rules[lowest.bit_length() - 1]
            if rule.pattern.search(view if rule.view == "text" else packed):
                return Verdict(False, rule.reason, rule.id, "rules")
            candidates ^= lowest
        return None

    def _rules(self, view: str, quoted: bool) -> tuple[Verdict | None, bool]:
        """The rules' verdict on ``view``, and whether the match was an ordinary style wish —
        then judged again with the rules for orders to the assistant stepping aside."""
        verdict = self._match(view, quoted)
        if verdict is not None and self._style_wish(verdict, view, quoted):
            return self._match(view, True), True
        return verdict, False

    def _style_wish(self, verdict: Verdict, view: str, quoted: bool) -> bool:
        """Whether an order rule's match is a memory's ordinary style wish, however phrased
        ("wants the assistant to always include a TL;DR"): the rules for orders to the
        assistant then leave it to the meaning layer, as the default-deny does."""
        return (self.directives and not quoted and verdict.rule in STYLE_ORDER_RULES
                and ordinary_style(view))

    @staticmethod
    def _secret(view: str) -> Verdict | None:
        secret = find_secret(view)
        return None if secret is None else Verdict(False, "secret", secret, "secrets")


def scalar_text(value: object) -> str | None:
    """What the guard judges for a metadata value: a string as itself, a number as its digits
    (an integral float without its ``.0``: 4111111111111111.0 is a card number too), None for a
    boolean or anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return None


@dataclass
class Screened:
    """What :func:`screen` kept, and counts of what it dropped by reason."""

    kept: list[int] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())


def screen(guard: Guard, texts: Sequence[str]) -> Screened:
    """Indexes of the texts to keep and per-reason counts of the rest."""
    out = Screened()
    for i, text in enumerate(texts):
        verdict = guard.check(text)
        if verdict.ok:
            out.kept.append(i)
        else:
            out.dropped[verdict.reason or "unknown"] += 1
    return out


def parse_rules(source: str, content: str) -> list[Rule]:
    """The rules of one TOML patterns file (``[[rule]]`` tables: id, reason, pattern, view)."""
    try:
        document = tomllib.loads(content)
    except tomllib.TOMLDecodeError as err:
        raise PatternError(f"{source}: not valid TOML: {err}") from None
    items = document.get("rule", [])
    if not isinstance(items, list):
        raise PatternError(f"{source}: 'rule' must be an array of tables ([[rule]])")
    rules = []
    for n, item in enumerate(items, 1):
        where = f"{source}: rule {n}"
        if not isinstance(item, dict):
            raise PatternError(f"{where}: must be a table")
        rule_id, reason = item.get("id"), item.get("reason")
        pattern, view = item.get("pattern"), item.get("view", "text")
        if not isinstance(rule_id, str) or not rule_id:
            raise PatternError(f"{where}: 'id' must be a non-empty string")
        where = f"{source}: rule {rule_id!r}"
        if reason not in REASONS[:4]:
            raise PatternError(f"{where}: 'reason' must be one of {list(REASONS[:4])}")
        if view not in ("text", "compact"):
            raise PatternError(f"{where}: 'view' must be 'text' or 'compact'")
        if not isinstance(pattern, str) or not pattern:
            raise PatternError(f"{where}: 'pattern' must be a non-empty string")
        try:
            compiled = re.compile(pattern)
        except re.error as err:
            raise PatternError(f"{where}: bad regular expression: {err}") from None
        rules.append(Rule(rule_id, reason, compiled, view))
    return rules


def bundled_sources() -> list[tuple[str, str]]:
    """(name, content) of the patterns files shipped in the package, by name."""
    folder = resources.files("eros.guard.patterns")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".toml")),
                   key=lambda f: f.name)
    return [(f"eros/guard/patterns/{f.name}", f.read_text(encoding="utf-8"))
            for f in files]


def extra_sources(directory: Path) -> list[tuple[str, str]]:
    """(path, content) of every ``*.toml`` in an ops-provided directory, by name."""
    if not directory.is_dir():
        raise PatternError(f"{directory} is not a directory")
    return [(str(p), p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.toml"))]


def build_guard(sources: Iterable[tuple[str, str]],
                max_chars: int = DEFAULT_MAX_CHARS) -> Guard:
    """A guard from (name, TOML) pairs; raises :class:`PatternError` naming a bad file/rule."""
    rules: list[Rule] = []
    names: list[str] = []
    for name, content in sources:
        rules.extend(parse_rules(name, content))
        names.append(name)
    return Guard(tuple(rules), max_chars, tuple(names))


@lru_cache(maxsize=8)
def load_guard(max_chars: int = DEFAULT_MAX_CHARS, extra_dir: Path | None = None) -> Guard:
    """The bundled rules plus ``extra_dir``'s, built once per process and configuration."""
    sources = bundled_sources()
    if extra_dir is not None:
        sources += extra_sources(extra_dir)
    return build_guard(sources, max_chars)
