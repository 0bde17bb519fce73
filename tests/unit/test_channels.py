"""Voice-tag stripping and the channel filter (core/channels.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from eros.core.transcript import Turn
from eros.memory.core.channels import readable_turns, strip_voice_tags

T0 = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.mark.parametrize(("voice", "spoken"), [
    ("[laughs] Oh, you remembered!", "Oh, you remembered!"),
    ("I moved (sighs) to Tokyo", "I moved to Tokyo"),
    ('I moved <break time="1s"/> to Tokyo', "I moved to Tokyo"),
    ("*whispers* I have a secret", "I have a secret"),
    ("<speak><emphasis level='strong'>I passed</emphasis> my exam!</speak>", "I passed my exam!"),
    ("[pause] Well [laughing softly] , fine", "Well, fine"),
    ("[笑] 我搬到东京了（叹气），*小声* 其实有点想家", "我搬到东京了，其实有点想家"),
    ("【哭腔】我和他分手了", "我和他分手了"),
    ("我搬到[停顿]东京了", "我搬到东京了"),
    ("I live in 上海 now", "I live in 上海 now"),
    ("line one [sigh]\n(coughs) line two", "line one\nline two"),
    ("[laughs]", ""),
])
def test_stage_and_tts_tags_are_stripped(voice: str, spoken: str) -> None:
    assert strip_voice_tags(voice) == spoken


def test_only_readable_channels_and_only_voice_is_stripped() -> None:
    turns = [Turn("user", "[note] typed brackets stay", T0, 1, "text"),
             Turn("user", "[laughs] said aloud", T0, 2, "voice"),
             Turn("user", "billing question", T0, 3, "product_qa")]
    got = readable_turns(turns, {"text", "voice"})
    assert [(t.seq, t.content) for t in got] == [(1, "[note] typed brackets stay"),
                                                 (2, "said aloud")]
    assert [t.seq for t in readable_turns(turns, {"text"})] == [1]
    assert readable_turns(turns, {"product_qa"})[0].content == "billing question"
