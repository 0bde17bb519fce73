"""Consolidation at scale (issue 17): a pass compares only the memories not yet compared, with
their neighbours, in bounded chunks; the sketch search finds the pairs the exact all-pairs join
finds; the finder's state is a count of what waits, so a late commit is never slipped under."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, text

from eros.consolidation.core.consolidation_plan import Change
from eros.consolidation.db import consolidation_sql as sql
from eros.consolidation.db import consolidation_state_sql as state_sql
from eros.consolidation.db import consolidation_write_sql as write_sql
from eros.consolidation.services.consolidate import Consolidator, consolidate
from eros.consolidation.services.consolidation_finder import find_and_claim
from eros.consolidation.services.consolidation_read import choose_search, search_pairs
from eros.recall.db.recall_hnsw_sql import HnswParams, configure_hnsw
from eros.recall.services import recall_cells
from eros.settings import load_settings
from tests.support.memories import copy_rows, with_hnsw

DIM = 512
NOW = datetime.now(UTC)


def unit(v: np.ndarray) -> list[float]:
    return [float(x) for x in v / np.linalg.norm(v)]


def add(engine: Engine, user: uuid.UUID, content: str, vector: list[float], *,
        days_ago: float, category: str = "fact", instance: uuid.UUID | None = None,
        model: str | None = None) -> uuid.UUID:
    with engine.begin() as conn:
        return conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, instance_id, content, category,"
            " importance, embedding, embedding_model, created_at)"
            " VALUES (:u, :i, :c, :k, 0.6, :e, :m, :t) RETURNING id"),
            {"u": user, "i": instance, "c": content, "k": category, "e": str(vector),
             "m": model, "t": NOW - timedelta(days=days_ago)}).scalar_one()


def axis(i: int) -> list[float]:
    vec = [0.0] * DIM
    vec[i] = 1.0
    return vec


def _pairs(pairs: list[tuple[uuid.UUID, uuid.UUID]]) -> set[tuple[uuid.UUID, uuid.UUID]]:
    return {(a, b) if str(a) < str(b) else (b, a) for a, b in pairs}


def test_the_sketch_search_finds_every_pair_of_the_exact_join(engine: Engine) -> None:
    """Restatements at cosine 0.86-0.99 of random 512-d vectors (the sketch's hard case is
    near θ), and look-alikes that must NOT pair: another category, layer, embedding model,
    user, or a cosine just under θ."""
    rng = np.random.default_rng(17)
    user, other, persona = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    ids, lookalikes = [], set()
    for g in range(12):
        base = rng.standard_normal(DIM)
        base /= np.linalg.norm(base)
        ids.append(add(engine, user, f"fact {g}", unit(base), days_ago=30))
        for j, cos in enumerate((0.86, 0.9, 0.99)[: 1 + g % 3]):
            noise = rng.standard_normal(DIM)
            noise -= noise.dot(base) * base
            noise /= np.linalg.norm(noise)
            twin = unit(cos * base + np.sqrt(1 - cos * cos) * noise)
            ids.append(add(engine, user, f"fact {g} again {j}", twin, days_ago=20 - j))
        lookalikes |= {
            add(engine, user, f"event {g}", unit(base), days_ago=9, category="event"),
            add(engine, user, f"persona {g}", unit(base), days_ago=9, instance=persona),
            add(engine, user, f"model {g}", unit(base), days_ago=9, model="other-model")}
        add(engine, other, f"fact {g}", unit(base), days_ago=9)
        noise = rng.standard_normal(DIM)
        noise -= noise.dot(base) * base
        noise /= np.linalg.norm(noise)
        lookalikes.add(add(engine, user, f"almost {g}", unit(0.8 * base + 0.6 * noise),
                           days_ago=8))
    ids += sorted(lookalikes, key=str)
    with engine.connect() as conn:
        exact = _pairs(sql.near_pairs(conn, user, similarity=0.85))
        sketch = _pairs(sql.quantised_pairs(conn, ids, similarity=0.85))
        by_chunk = _pairs(sql.exact_pairs(conn, user, ids[:20], similarity=0.85)
                          + sql.exact_pairs(conn, user, ids[20:], similarity=0.85))
    with_hnsw(engine)  # what `eros migrate` builds for CONSOLIDATION_HNSW_ABOVE > 0
    settings = load_settings(consolidation_hnsw_above=10, consolidation_similarity=0.85)
    with engine.connect() as conn, conn.begin():  # a "very large" user: the HNSW plan
        assert choose_search(conn, user, settings) == "hnsw"
        knn = _pairs(search_pairs(conn, user, ids, settings, search="hnsw"))
    assert len(exact) >= sum(1 + g % 3 for g in range(12))  # every twin with its base
    assert not {i for p in exact for i in p} & lookalikes  # none of them pairs with anything
    assert sketch == exact and by_chunk == exact and knn == exact
    # the same user cut into recall cells: each memory searched in its nearest cells only
    report = recall_cells.cluster_user(engine, load_settings(), user)
    cells = load_settings(consolidation_exact_below=10, consolidation_similarity=0.85,
                          consolidation_cell_probes=max(1, report.cells // 2))
    with engine.connect() as conn, conn.begin():
        assert choose_search(conn, user, cells) == "cells"
        probed = _pairs(search_pairs(conn, user, ids, cells, search="cells"))
    assert report.cells >= 4 and probed == exact


def test_a_backlog_is_worked_through_in_bounded_chunks(consolidator: Consolidator,
                                                      engine: Engine) -> None:
    small = Consolidator(consolidator.settings.model_copy(update={"consolidation_chunk_size": 3}),
                         consolidator.engine, consolidator.llm, consolidator.embedder,
                         consolidator.prompt)
    user = uuid.uuid4()
    for i in range(4):
        add(engine, user, "Lives in Shanghai", axis(0), days_ago=10 - i)
        add(engine, user, f"distinct fact {i}", axis(10 + i), days_ago=20 - i)
    reports = [consolidate(small, user, keep_claim_on_backlog=True)]
    with engine.connect() as conn:  # the claim stays for the next chunk the task enqueues
        assert state_sql.state(conn, user)["claimed_at"] is not None  # type: ignore[index]
    assert find_and_claim(engine, consolidator.settings).claimed == []
    while reports[-1].backlog:
        reports.append(consolidate(small, user))
        assert len(reports) < 10
    assert all(r.compared <= 3 for r in reports) and len(reports) >= 3
    assert sum(r.merged for r in reports) == 3
    with engine.connect() as conn:
        left = conn.execute(text(
            "SELECT (SELECT count(*) FROM engine.consolidation_backlog WHERE user_id = :u),"
            " count(*) FILTER (WHERE status = 'current')"
            " FROM engine.companion_memories WHERE user_id = :u"), {"u": user}).one()
        assert state_sql.state(conn, user)["claimed_at"] is None  # type: ignore[index]
    assert tuple(left) == (0, 5)


def test_a_late_commit_with_an_older_date_is_measured_and_compared(
        consolidator: Consolidator, engine: Engine) -> None:
    """A classify transaction can commit after the finder ran, with a created_at older than
    anything the finder saw: a created_at watermark slipped it under; the count does not."""
    user = uuid.uuid4()
    for i in range(5):
        add(engine, user, f"distinct fact {i}", axis(10 + i), days_ago=i)
    first = find_and_claim(engine, consolidator.settings)
    assert (first.measured, first.below_threshold) == (1, 1)
    assert find_and_claim(engine, consolidator.settings).measured == 0  # nothing new: not measured
    add(engine, user, "distinct fact 0", axis(10), days_ago=30)  # committed late, dated early
    add(engine, user, "distinct fact 1", axis(11), days_ago=30)
    late = find_and_claim(engine, consolidator.settings)
    assert late.measured == 1 and late.claimed == [user]  # 4 of 7 with a twin
    report = consolidate(consolidator, user)
    assert (report.compared, report.merged) == (7, 2)
    # and after a pass: one more, dated before everything compared, is compared next pass
    add(engine, user, "distinct fact 2", axis(12), days_ago=60)
    again = consolidate(consolidator, user)
    assert (again.compared, again.merged) == (1, 1)


def test_the_pass_reads_only_the_new_memories_and_their_neighbours(
        consolidator: Consolidator, engine: Engine) -> None:
    user = uuid.uuid4()
    for i in range(30):
        add(engine, user, f"distinct fact {i}", axis(10 + i), days_ago=40 - i)
    assert consolidate(consolidator, user).compared == 30
    add(engine, user, "distinct fact 3", axis(13), days_ago=0)
    add(engine, user, "something new", axis(100), days_ago=0)
    report: Any = consolidate(consolidator, user)
    # two compared, one neighbour found: three memories read of the user's 32
    assert (report.compared, report.memories, report.merged) == (2, 3, 1)
    assert report.share_before == pytest.approx(2 / 3, abs=1e-4) and report.share_after == 0


def _buffers(conn: Any, statement: str, params: dict[str, Any]) -> int:
    """Shared buffers an UPDATE touched, index upkeep included (EXPLAIN ANALYZE, rolled back
    by the caller): a count, not a time, so a loaded machine does not change it."""
    plan = conn.execute(text(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}"),
                        params).scalar_one()[0]["Plan"]
    return int(plan["Shared Hit Blocks"]) + int(plan["Shared Read Blocks"])


def test_a_merged_member_leaves_the_graph_instead_of_entering_it_again(
        engine: Engine, db_url: str) -> None:
    """Issue 34 item 3 (0028): the HNSW index holds current rows only. A status change is
    never a HOT update (a 2 KB row leaves no room on its page), so with a full index every
    merged member's new version was searched into the graph again (~75% of a 50k first
    pass's writes). Now a merge costs what an update of a row outside the graph costs: a
    fraction of the same rows' update while they stay current (which still enters it)."""
    rng = np.random.default_rng(41)
    user = uuid.uuid4()
    with_hnsw(engine)  # where a plan reads it (RECALL_QUANTIZED_SCAN=false)
    vectors = rng.standard_normal((1200, DIM))
    copy_rows(db_url, ((user, None, f"m {i}", "fact", 0.5, NOW - timedelta(days=1),
                        vectors[i] / np.linalg.norm(vectors[i])) for i in range(1200)))
    with engine.connect() as conn:
        ids = [r.id for r in conn.execute(text(
            "SELECT id FROM engine.companion_memories WHERE user_id = :u ORDER BY content"),
            {"u": user})]
    chosen = {"ids": ids[:300]}
    with engine.connect() as conn:
        with conn.begin() as tx:  # stays current: a new version in every index, HNSW too
            kept = _buffers(conn, "UPDATE engine.companion_memories SET importance = 0.7"
                            " WHERE id = ANY(:ids)", chosen)
            tx.rollback()
        with conn.begin() as tx:  # merged: the same rows, the same other indexes
            merged = _buffers(conn, "UPDATE engine.companion_memories SET status = 'merged',"
                              " replaced_by = :into, replaced_at = now() WHERE id = ANY(:ids)",
                              {**chosen, "into": ids[-1]})
            tx.rollback()
    assert merged * 2 < kept, (merged, kept)
    with engine.begin() as conn:  # and the pass's own statement merges them
        assert write_sql.apply_changes(conn, [Change(ids[i], "merged", ids[300 + i])
                                        for i in range(300)]) == 300
    # the HNSW search of a very large user still walks the graph (its WHERE implies the
    # index's predicate), and finds no merged row
    with engine.connect() as conn, conn.begin():
        configure_hnsw(conn, HnswParams(ef_search=64), at_least=16)
        params = {"ids": ids[:400], "k": 16, "max_distance": 2.0}
        plan = "\n".join(r[0] for r in conn.execute(
            text("EXPLAIN " + str(sql.KNN_PAIRS)), params))
        assert "ix_companion_memories_embedding_hnsw" in plan
        found = sql.knn_pairs(conn, ids[300:400], similarity=-1.0, k=16)
    assert found and not {i for p in found for i in p} & set(ids[:300])



def test_a_backlog_page_is_the_next_current_rows_in_order_and_reads_only_a_page(
        engine: Engine) -> None:
    """Issue 34: a backlog page reads the backlog's index in order and stops after the page
    (it read the user's whole backlog and looked every row up: ~30 ms a page at 50k); rows
    no longer current are stepped over, across pages, as the join did."""
    user = uuid.uuid4()
    ids = [add(engine, user, f"m {i}", unit(np.eye(DIM)[i % DIM]), days_ago=40 - i)
           for i in range(40)]
    gone = set(ids[2:9]) | {ids[12], ids[30]}  # merged meanwhile, still in the backlog
    with engine.begin() as conn:
        conn.execute(text("UPDATE engine.companion_memories SET status = 'merged'"
                          " WHERE id = ANY(:ids)"), {"ids": list(gone)})
    current = [i for i in ids if i not in gone]
    with engine.connect() as conn:
        walked: list[uuid.UUID] = []
        after = None
        while page := sql.uncompared_page(conn, user, 3, after):
            assert len(page) == 3 or len(walked) + len(page) == len(current)
            walked += [i for i, _ in page]
            after = (page[-1][1], page[-1][0])
        assert walked == current
        assert [i for i, _ in sql.uncompared_page(conn, user, 100, None)] == current
        plan = "\n".join(r[0] for r in conn.execute(text(
            "EXPLAIN (ANALYZE, COSTS OFF) " + str(sql.UNCOMPARED_PAGE)),
            {"user_id": user, "n": 3, "after_at": datetime(1, 1, 1, tzinfo=UTC),
             "after_id": uuid.UUID(int=0)}))
    # the memories are looked up for the page's rows only (3), never for the whole backlog
    lookups = plan[plan.index("companion_memories_pkey"):]
    assert "loops=3)" in lookups.splitlines()[0], plan  # a lookup per row of the page
    assert "ix_companion_memories_current" not in plan
