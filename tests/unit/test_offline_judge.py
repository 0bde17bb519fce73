"""The offline consolidation judge: moves and job changes supersede, same-worded memories
merge, anything else in a (wide, e5-made) cluster is left alone; its replies pass the same
validator as a model's."""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest

from eros.consolidation.core.consolidation import Memory, cluster, select_clusters
from eros.consolidation.core.consolidation_reply import build_request, parse_reply
from eros.providers.offline import OfflineChat
from eros.providers.offline.judge import judged_consolidation_reply, residence

T0 = datetime(2026, 9, 1, tzinfo=UTC)


def mem(content: str, days: float, category: str = "fact") -> Memory:
    return Memory(uuid.uuid4(), content, category, T0 + timedelta(days=days), 0.7, None, False)


def decide(members: list[Memory]):  # type: ignore[no-untyped-def]
    """Members as one near-duplicate cluster, judged and validated."""
    pairs = [(a.id, b.id) for a, b in itertools.pairwise(members)]
    selection = select_clusters(cluster(members, pairs).clusters, max_clusters=5)
    request = build_request(selection.sent, date(2026, 12, 1))
    result = parse_reply(judged_consolidation_reply(request), selection.sent)
    assert result.rejected == ()
    (decision,) = result.decisions
    return decision


@pytest.mark.parametrize(("text", "place"), [
    ("Lives in Shanghai", "shanghai"), ("Moved to Tokyo last week", "tokyo"),
    ("I moved back to Chicago", "chicago"), ("住在上海", "上海"), ("搬回老家长沙了", "长沙"),
    ("Moved here two years ago from Manchester", None), ("Likes Shanghai food", None)])
def test_residence_is_read_in_english_and_chinese(text: str, place: str | None) -> None:
    assert residence(text) == place


def test_a_move_supersedes_the_old_city_and_same_city_statements_merge() -> None:
    shanghai = mem("Lives in Shanghai", 0)
    manchester = mem("Moved here two years ago from Manchester", 1)
    moved = mem("Moved to Tokyo last week", 60)
    lives = mem("Lives in Tokyo now", 70)
    d = decide([shanghai, manchester, moved, lives])
    assert d.canonical is not None and d.canonical.content == "Lives in Tokyo now"
    assert {m.id for m in d.duplicates} == {moved.id, lives.id}
    assert [m.id for m in d.superseded] == [shanghai.id]
    assert [m.id for m in d.separate] == [manchester.id]


def test_chinese_job_change_supersedes() -> None:
    old = mem("在深圳一家创业公司做后端开发", 0)
    new = mem("在长沙一家银行上班", 30)
    d = decide([old, new])
    assert d.canonical is not None and d.canonical.content == new.content
    assert [m.id for m in d.superseded] == [old.id]


def test_unrecognised_neighbours_stay_separate_and_only_same_words_merge() -> None:
    tired, exhausted, again = (mem("Feels so tired", 0, "emotion"),
                               mem("Feels exhausted", 1, "emotion"),
                               mem("feels so tired, really.", 2, "emotion"))
    d = decide([tired, exhausted, again])
    assert {m.id for m in d.duplicates} == {tired.id, again.id} and not d.superseded
    assert [m.id for m in d.separate] == [exhausted.id]
    alone = decide([mem("Loves spicy food", 0, "preference"),
                    mem("Hates cilantro", 1, "preference")])
    assert alone.canonical is None and not alone.changes


def test_offline_chat_answers_consolidation_requests_with_the_judge() -> None:
    members = [mem("Lives in Shanghai", 0), mem("Moved to Tokyo", 9)]
    pairs = [(members[0].id, members[1].id)]
    selection = select_clusters(cluster(members, pairs).clusters, max_clusters=5)
    reply = OfflineChat().complete("system", build_request(selection.sent, date(2026, 12, 1)),
                                   max_tokens=500)
    assert json.loads(reply.text)["clusters"][0]["superseded"] == [1]
