"""The offline extractor's layer rule: a HEURISTIC twin of the prompt's layer definitions.

A clause is a relationship memory when it is about the user *with this companion*: it names
the companion ("you", 你, 咱们) or says something only the two of them share (a nickname, a
promise, an inside joke). Everything else is profile, as the prompt's "when unsure" says.
"""

from __future__ import annotations

import re
from typing import Final

#: the companion named in a clause the first-person cues already accepted.
_COMPANION_EN: Final = re.compile(r"\b(?:you|your|yours|yourself)\b")
_COMPANION_ZH: Final = re.compile("你|咱们|咱俩|我们俩|我们之间")
#: clauses no profile cue accepts (they address the companion) that still say something
#: durable between the two; the first matching category wins.
_CUES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("preference", re.compile(
        r"^(?:please )?call me\b|\bi (?:like|love) (?:it )?when you\b|叫我|喜欢你(?:叫|说|陪)",
        re.IGNORECASE)),
    ("event", re.compile(
        r"\byou (?:promised|swore)\b|\byou said you(?:'d| would)\b|\bremember when (?:we|you)\b"
        "|你答应|你说过|你保证|还记得我们", re.IGNORECASE)),
    ("emotion", re.compile(
        r"\b(?:talking|chatting) (?:to|with) you\b|\bi (?:trust|need) you\b"
        "|(?:跟|和)你聊天|信任你|离不开你", re.IGNORECASE)),
    ("relation", re.compile(
        r"\bour (?:song|joke|secret|ritual|thing|nickname|code ?word|promise)\b|\binside joke\b"
        "|我们的(?:暗号|秘密|约定|歌)|咱们的", re.IGNORECASE)),
)
_CALL_ME: Final = re.compile(r"^(?:please )?call me\s+(.+)$", re.IGNORECASE)


def relationship_category(clause: str) -> str | None:
    """The category of a clause that is only about the user with the companion, or None."""
    for category, pattern in _CUES:
        if pattern.search(clause):
            return category
    return None


def mentions_companion(clause: str) -> bool:
    """Whether an accepted clause involves the companion (then it is a relationship memory)."""
    return bool(_COMPANION_EN.search(clause.lower()) or _COMPANION_ZH.search(clause))


def companion_wording(content: str) -> str:
    """Third-person wording of a relationship memory: "you" becomes "the companion"."""
    call = _CALL_ME.match(content)
    if call:
        return f"Wants the companion to call them {call.group(1).rstrip(' .!')}"
    content = re.sub(r"\byou are\b", "the companion is", content, flags=re.IGNORECASE)
    content = re.sub(r"\byou were\b", "the companion was", content, flags=re.IGNORECASE)
    content = re.sub(r"\byour\b", "the companion's", content, flags=re.IGNORECASE)
    content = re.sub(r"\byou\b", "the companion", content, flags=re.IGNORECASE)
    return content[:1].upper() + content[1:]
