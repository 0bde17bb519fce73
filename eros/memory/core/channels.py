"""Which turns extraction reads: the channel filter and the voice-tag stripper.

A turn carries the channel it came through (``chat_messages.channel``: ``text``, ``voice``,
``product_qa``, …). Only channels in ``DREAMING_CHANNELS`` reach the model. Voice turns are
TTS scripts and speech transcripts: their stage directions and markup ("[laughs]",
"(sighs)", ``<break time="1s"/>``, "*whispers*", "[笑]", "（叹气）") are not what the user
said and would read as facts ("laughs a lot"), so they are stripped first.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Final

from eros.core.transcript import Turn

VOICE: Final = "voice"
_VOICE_TAGS: Final = re.compile(
    r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>"     # SSML/markup: <break time="1s"/>, <emphasis>
    r"|\[[^\[\]\n]{1,40}\]|【[^【】\n]{1,20}】"   # [laughs], [笑], 【哭腔】
    r"|\([^()\n]{1,40}\)|（[^（）\n]{1,20}）"    # (sighs), （叹气）
    r"|\*{1,2}[^*\n]{1,40}\*{1,2}")           # *whispers*, **小声**
_SPACES: Final = re.compile(r"[ \t]{2,}")
_SPACE_BEFORE_PUNCT: Final = re.compile(r"[ \t]+([,.!?;:，。！？；：、])")
#: a removed tag between two Chinese characters leaves no space ("我搬到 东京" → "我搬到东京")
_CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"
_SPACE_IN_CJK: Final = re.compile(f"(?<=[{_CJK}])[ \t]+(?=[{_CJK}])|(?<=[，。！？；：、])[ \t]+")


def strip_voice_tags(text: str) -> str:
    """A voice turn without its stage directions and TTS markup, spacing tidied."""
    stripped = _VOICE_TAGS.sub(" ", text)
    stripped = _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", stripped))
    stripped = _SPACE_IN_CJK.sub("", stripped)
    return "\n".join(line.strip() for line in stripped.split("\n")).strip()


def readable_turns(turns: Sequence[Turn], channels: Collection[str]) -> list[Turn]:
    """The turns of the readable channels, voice turns with their tags stripped."""
    return [replace(t, content=strip_voice_tags(t.content)) if t.channel == VOICE else t
            for t in turns if t.channel in channels]
