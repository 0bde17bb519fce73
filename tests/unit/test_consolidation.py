"""Consolidation, the pure part: clustering, the near-duplicate share, the prompt, the reply
validator and the plan. The model's reply is untrusted: every way it can point at the wrong
memory must be caught here, per cluster, before anything reaches the database."""

from __future__ import annotations

import json
import random
import re
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest

from eros.consolidation.core.consolidation import Memory, cluster, near_dup_share, select_clusters
from eros.consolidation.core.consolidation_plan import build_plan
from eros.consolidation.core.consolidation_reply import (
    build_request,
    load_consolidation_prompt,
    parse_reply,
)
from eros.core.names import FIND_CONSOLIDATION_TASK
from eros.prompts import CONSOLIDATION_HEADER
from eros.providers.offline.heuristic import offline_consolidation_reply
from eros.settings import load_settings
from eros.tasks.app import create_app
from eros.tasks.schedule import default_schedule

T0 = datetime(2025, 3, 2, 10, 15, tzinfo=UTC)
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def mem(content: str, days: float = 0, category: str = "fact", *, seen: bool = False,
        importance: float | None = 0.5, instance: uuid.UUID | None = None) -> Memory:
    return Memory(uuid.uuid4(), content, category, T0 + timedelta(days=days), importance,
                  instance, seen)


def ids(memories: tuple[Memory, ...] | list[Memory]) -> set[uuid.UUID]:
    return {m.id for m in memories}


# --- clustering -------------------------------------------------------------------------------
def test_exact_copies_fold_into_the_newest_within_layer_and_category() -> None:
    copies = [mem("Lives in Shanghai", 1), mem("lives in  shanghai.", 5),
              mem("LIVES IN SHANGHAI", 3)]
    other_category = mem("Lives in Shanghai", 9, "event")
    other_layer = mem("Lives in Shanghai", 9, instance=uuid.uuid4())
    result = cluster([*copies, other_category, other_layer], [])
    assert len(result.exact) == 1
    group = result.exact[0]
    assert group.keep is copies[1]
    assert ids(group.merged) == {copies[0].id, copies[2].id}
    assert result.clusters == ()  # copies of one text are not a near-duplicate cluster


def test_union_find_links_transitively_and_ignores_pairs_across_categories() -> None:
    a, b, c = mem("Likes jazz", 1), mem("Likes jazz music", 2), mem("Loves jazz music", 3)
    d = mem("Likes jazz", 4, "event")  # same text, other category: never linked
    lonely = mem("Has a cat", 5)
    result = cluster([a, b, c, d, lonely], [(a.id, b.id), (b.id, c.id), (c.id, d.id)])
    assert len(result.clusters) == 1
    assert [m.id for m in result.clusters[0].members] == [a.id, b.id, c.id]  # oldest first


def test_pair_order_does_not_change_the_clusters() -> None:
    ms = [mem(f"fact {i}", i) for i in range(6)]
    pairs = [(ms[0].id, ms[1].id), (ms[2].id, ms[3].id), (ms[1].id, ms[2].id),
             (ms[4].id, ms[5].id)]
    one = cluster(ms, pairs).clusters
    two = cluster(ms, [(b, a) for a, b in reversed(pairs)]).clusters
    assert [ids(c.members) for c in one] == [ids(c.members) for c in two]
    assert sorted(len(c.members) for c in one) == [2, 4]


def test_exact_copies_join_a_near_cluster_as_one_member() -> None:
    old, copy, near = mem("Lives in Shanghai", 1), mem("Lives in Shanghai", 2), \
        mem("Lives in Shanghai, China", 3)
    result = cluster([old, copy, near], [(old.id, near.id)])  # the pair names the old copy
    assert len(result.exact) == 1 and result.exact[0].keep is copy
    assert [m.id for m in result.clusters[0].members] == [copy.id, near.id]


def test_oversized_cluster_keeps_its_newest_members() -> None:
    ms = [mem(f"variant {i}", i) for i in range(5)]
    result = cluster(ms, [(ms[i].id, ms[i + 1].id) for i in range(4)], max_size=3)
    only = result.clusters[0]
    assert [m.id for m in only.members] == [m.id for m in ms[2:]]
    assert ids(only.overflow) == {ms[0].id, ms[1].id}


def test_cluster_is_new_only_if_something_in_it_is_new() -> None:
    a, b = mem("Likes tea", 1, seen=True), mem("Likes green tea", 2, seen=True)
    assert cluster([a, b], [(a.id, b.id)]).clusters[0].new is False
    fresh_copy = mem("likes tea", 3)  # an unseen exact copy makes its cluster new again
    assert cluster([a, b, fresh_copy], [(a.id, b.id)]).clusters[0].new is True
    # ... even when it is older than the copy that stays (a classify that committed late)
    late = mem("likes tea", 0.5)
    result = cluster([a, b, late], [(a.id, b.id)])
    assert result.exact[0].keep is a and result.clusters[0].new is True


# --- the share ------------------------------------------------------------------------------
def test_share_counts_memories_with_a_near_twin() -> None:
    copies = [mem("Lives in Shanghai", i) for i in range(5)]
    others = [mem(f"unrelated {i}", i) for i in range(5)]
    assert near_dup_share([*copies, *others], []).value == 0.5
    a, b = others[0], others[1]
    share = near_dup_share([*copies, *others], [(a.id, b.id), (a.id, b.id)])
    assert (share.near, share.total) == (7, 10)
    assert near_dup_share([], []).value == 0.0


def test_share_ignores_pairs_of_unknown_or_cross_layer_memories() -> None:
    a, b = mem("x", 1), mem("x y", 2, instance=uuid.uuid4())
    assert near_dup_share([a, b], [(a.id, b.id), (a.id, uuid.uuid4())]).near == 0


# --- selection and the prompt -----------------------------------------------------------------
def _two_clusters() -> tuple[list[Memory], list[tuple[uuid.UUID, uuid.UUID]]]:
    ms = [mem("Lives in Shanghai", 0), mem("Moved to Tokyo", 300),
          mem("Likes jazz", 10, "preference", importance=None), mem("Likes jazz music", 20,
                                                                     "preference")]
    return ms, [(ms[0].id, ms[1].id), (ms[2].id, ms[3].id)]


def test_numbers_run_across_clusters_and_a_cap_defers_the_rest() -> None:
    ms, pairs = _two_clusters()
    result = cluster(ms, pairs)
    selection = select_clusters(result.clusters, max_clusters=5)
    assert [p.number for p in selection.sent] == [1, 2]
    assert [p.numbers for p in selection.sent] == [(1, 2), (3, 4)]
    capped = select_clusters(result.clusters, max_clusters=1)
    assert len(capped.sent) == 1 and len(capped.deferred) == 1


def test_prompt_names_memories_by_small_numbers_with_dates_never_uuids() -> None:
    ms, pairs = _two_clusters()
    selection = select_clusters(cluster(ms, pairs).clusters, max_clusters=5)
    request = build_request(selection.sent, date(2026, 1, 1))
    assert request.startswith(CONSOLIDATION_HEADER) and "Today is 2026-01-01" in request
    assert not UUID_RE.search(request)
    assert "[1] 2025-03-02 10:15 UTC | fact | importance 0.50 | Lives in Shanghai" in request
    assert "[2] 2025-12-27 10:15 UTC | fact" in request
    assert "importance - | Likes jazz" in request
    assert load_consolidation_prompt().version == "consolidate_v1"


# --- the reply validator ----------------------------------------------------------------------
def _selection():  # type: ignore[no-untyped-def]
    ms, pairs = _two_clusters()
    return ms, select_clusters(cluster(ms, pairs).clusters, max_clusters=5)


def answer(number: int, dup: list[object], sup: list[object] = (), sep: list[object] = (),
           content: str | None = "Moved to Tokyo", category: str = "fact") -> dict[str, object]:
    out: dict[str, object] = {"cluster": number, "duplicates": list(dup),
                              "superseded": list(sup), "separate": list(sep)}
    if content is not None:
        out["canonical"] = {"content": content, "category": category, "importance": 0.8}
    return out


def test_valid_reply_decides_every_cluster() -> None:
    ms, selection = _selection()
    reply = json.dumps({"clusters": [answer(1, [2], [1]),
                                     answer(2, ["3", "#4"], content="Likes jazz music",
                                            category="preference")]})
    result = parse_reply(reply, selection.sent)
    assert result.status == "ok" and result.rejected == ()
    tokyo, jazz = result.decisions
    assert tokyo.superseded == (ms[0],) and tokyo.duplicates == (ms[1],)
    assert ids(jazz.duplicates) == {ms[2].id, ms[3].id}


@pytest.mark.parametrize(("bad", "reason"), [
    (answer(1, [2], [7]), "not in cluster 1"),          # invented number
    (answer(1, [2], [3]), "not in cluster 1"),          # a number of another cluster
    (answer(1, ["two"]), "not a memory number"),        # garbled
    (answer(1, [2.5]), "not a memory number"),
    (answer(1, [True]), "must be an integer"),
    (answer(1, [1, 2], [2]), "both duplicates and superseded"),
    (answer(1, [1], [2]), "not older than the newest duplicate"),  # old supersedes new
    (answer(1, [], [1]), "need a canonical memory derived from a newer one"),
    (answer(1, [1, 2], content=None), "no valid canonical"),
    (answer(1, [1, 2], content="   "), "content"),
])
def test_a_bad_answer_rejects_its_cluster_only(bad: dict[str, object], reason: str) -> None:
    _, selection = _selection()
    good = answer(2, [3, 4], content="Likes jazz music", category="preference")
    result = parse_reply(json.dumps({"clusters": [bad, good]}), selection.sent)
    assert result.status == "ok"
    assert [d.cluster.number for d in result.decisions] == [2]
    assert [r.cluster for r in result.rejected] == [1]
    assert reason in result.rejected[0].reason


def test_missing_twice_answered_and_invented_clusters() -> None:
    _, selection = _selection()
    twice = [answer(1, [2], [1]), answer(1, [1, 2]), answer(9, [1, 2])]
    result = parse_reply(json.dumps({"clusters": twice}), selection.sent)
    assert result.decisions == ()
    assert [(r.cluster, r.reason) for r in result.rejected] == [
        (1, "answered more than once"), (2, "no answer for this cluster")]


@pytest.mark.parametrize("reply", ["I merged them for you!", "", '{"memories": []}', "[1, 2",
                                   '{"clusters": "all"}'])
def test_unreadable_replies_are_unparseable(reply: str) -> None:
    _, selection = _selection()
    assert parse_reply(reply, selection.sent).status == "unparseable"


def test_fenced_reply_and_unmentioned_members_stay_separate() -> None:
    ms, selection = _selection()
    body = json.dumps({"clusters": [{"cluster": 1, "separate": [1, 2]},
                                    answer(2, [4], content="Likes jazz music",
                                           category="preference")]})
    result = parse_reply(f"Here you go:\n```json\n{body}\n```", selection.sent)
    first, second = result.decisions
    assert not first.changes and ids(first.separate) == {ms[0].id, ms[1].id}
    assert not second.changes and second.separate == (ms[2],)  # 3 unmentioned: separate


# --- the plan ---------------------------------------------------------------------------------
def _counter():  # type: ignore[no-untyped-def]
    made = iter(uuid.UUID(int=i) for i in range(1, 100))
    return lambda: next(made)


def test_plan_reuses_a_member_whose_text_is_the_canonical() -> None:
    ms, selection = _selection()
    clustering = cluster(ms, [(ms[0].id, ms[1].id), (ms[2].id, ms[3].id)])
    reply = parse_reply(json.dumps({"clusters": [answer(1, [2], [1])]}), selection.sent)
    plan = build_plan(clustering, selection, reply, new_id=_counter())
    (step,) = plan.steps
    assert step.new_row is None and step.result_id == ms[1].id  # Tokyo stays current
    assert [(c.memory_id, c.status, c.replaced_by) for c in step.changes] == [
        (ms[0].id, "superseded", ms[1].id)]
    assert [h.action for h in step.history] == ["supersede"]
    assert plan.superseded == 1 and plan.merged == 0
    # cluster 2 was not answered: judged all the same (asked again when something new joins)
    assert plan.judged == ids(ms) and plan.unresolved == frozenset()


def test_clusters_that_did_not_fit_are_unresolved_not_judged() -> None:
    ms, pairs = _two_clusters()
    clustering = cluster(ms, pairs)
    selection = select_clusters(clustering.clusters, max_clusters=1)
    reply = parse_reply(json.dumps({"clusters": [answer(1, [2], [1])]}), selection.sent)
    plan = build_plan(clustering, selection, reply)
    assert plan.unresolved == ids(ms[2:]) and plan.judged == ids(ms[:2])


def test_plan_writes_a_new_row_dated_like_its_newest_source() -> None:
    ms, selection = _selection()
    clustering = cluster(ms, [(ms[0].id, ms[1].id), (ms[2].id, ms[3].id)])
    reply = parse_reply(json.dumps({"clusters": [
        {"cluster": 1, "separate": [1, 2]},
        answer(2, [3, 4], content="Enjoys jazz", category="preference")]}), selection.sent)
    plan = build_plan(clustering, selection, reply, new_id=_counter())
    (step,) = plan.steps
    assert step.new_row is not None and step.new_row.id == uuid.UUID(int=1)
    assert step.new_row.created_at == ms[3].created_at and step.new_row.importance == 0.8
    assert {c.memory_id for c in step.changes} == ids(ms[2:])
    assert all(c.status == "merged" and c.replaced_by == uuid.UUID(int=1) for c in step.changes)
    assert plan.judged == ids(ms)


def test_plan_merges_exact_copies_without_a_model() -> None:
    copies = [mem("Lives in Shanghai", i, importance=0.3 + i / 10) for i in range(5)]
    clustering = cluster(copies, [])
    selection = select_clusters(clustering.clusters, max_clusters=5)
    assert selection.sent == ()
    plan = build_plan(clustering, selection, None)
    (step,) = plan.steps
    assert step.kind == "exact" and step.result_id == copies[-1].id and plan.merged == 4
    assert step.importance is None  # the newest already has the highest importance
    assert step.history[0].source_ids == tuple(m.id for m in copies[:-1])
    assert plan.judged == frozenset()  # in no cluster: nothing to stamp


# --- the offline provider and the schedule ------------------------------------------------------
def test_offline_answer_is_a_valid_reply_merging_into_the_newest() -> None:
    _, selection = _selection()
    reply = offline_consolidation_reply(build_request(selection.sent, date(2026, 1, 1)))
    result = parse_reply(reply, selection.sent)
    assert result.rejected == () and len(result.decisions) == 2
    assert [d.canonical.content for d in result.decisions if d.canonical] == [
        "Moved to Tokyo", "Likes jazz music"]


def test_beat_runs_the_finder_hourly_off_the_claim_queue() -> None:
    # issue 17: a finder measuring a backlog must not hold the claim queue (served with -c 1)
    entry = default_schedule(load_settings())["find-consolidation-candidates"]
    assert entry == {"task": FIND_CONSOLIDATION_TASK, "schedule": 3600.0,
                     "options": {"queue": "eros.consolidate", "expires": 3600.0}}
    quick = default_schedule(load_settings(consolidation_interval_secs=60))
    assert quick["find-consolidation-candidates"]["schedule"] == 60.0
    # and a run sent without a queue (a shell, another scheduler) goes there too
    routes = create_app(load_settings(redis_url="redis://127.0.0.1:1/0")).conf.task_routes
    assert routes[FIND_CONSOLIDATION_TASK] == {"queue": "eros.consolidate"}


def test_a_rejection_reason_never_quotes_the_model(  # issue 14: reasons reach last_error
        ) -> None:
    _, selection = _selection()
    bad = answer(1, ["she lives at zqxsecret street"], content="Lives at zqxsecret street")
    result = parse_reply(json.dumps({"clusters": [bad]}), selection.sent)
    assert result.rejected and "not a memory number" in result.rejected[0].reason
    assert "zqxsecret" not in result.rejected[0].reason


def test_unique_pairs_orders_ids_as_their_text_does() -> None:
    """The pair order (each pair's ends, then the pairs) is the text order the ids were once
    sorted by: a UUID's 128 bits and its fixed-width lowercase hex order alike."""
    from eros.consolidation.db.consolidation_sql import pair_order, unique_pairs

    rng = random.Random(34)
    ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(300)]
    ids += [uuid.UUID(int=n) for n in (0, 1, 15, 16, 255, 2**64, 2**128 - 1)]
    rows = [(rng.choice(ids), rng.choice(ids)) for _ in range(2000)]
    by_text = sorted({(a, b) if str(a) < str(b) else (b, a) for a, b in rows},
                     key=lambda p: (str(p[0]), str(p[1])))
    assert unique_pairs(rows) == by_text
    assert sorted(rows, key=pair_order) == sorted(rows, key=lambda p: (str(p[0]), str(p[1])))
