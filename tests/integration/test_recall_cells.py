"""Recall cells (migration 0008) against real PostgreSQL + pgvector.

A heavy user's memories are cut into cells by k-means; recall then reads only the sketches of
the cells nearest the query. What must hold: the mirror ``memory_sketches`` follows every write
to ``companion_memories`` in the same transaction; clustering puts every memory in a cell and
new memories join their nearest one; a row in no cell is still found; the probe gives exactly
K rows and, on topic-structured data, the exact answer; nothing leaks across users or personas;
and the plan reads the mirror's index only.
"""

from __future__ import annotations

import re
import threading
import time
import tracemalloc
import uuid
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, text

from eros.recall import RecallResult, recall_by_vector
from eros.recall.core.cells import cell_count, spherical_kmeans
from eros.recall.db import cells_sql, recall_sql
from eros.recall.services import recall_cells
from eros.recall.services.recall_cells import REGROW_FACTOR
from eros.settings import Settings
from tests.integration.test_recall import CATS, NOW, cfg, contents
from tests.support.memories import DIM, Mem, add, copy_rows, unit

CELLS = cfg(recall_exact_scan_below=100)
EXACT = cfg(recall_exact_scan_below=10**9)


def topic_vectors(rng: np.random.Generator, n: int, topics: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors around ``topics`` centroids (cosine ≈ 0.7 to their own), topic 0
    being :data:`TOPIC0`'s direction; returns (vectors, topic of each)."""
    centroids = rng.standard_normal((topics, DIM)).astype(np.float32)
    centroids[0] = TOPIC0
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    topic = rng.integers(0, topics, n)
    vectors = centroids[topic] + rng.standard_normal((n, DIM)).astype(np.float32) / np.sqrt(DIM)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), topic


#: the direction of every user's topic 0 and of the queries (random: an axis-aligned query
#: such as ``QUERY`` has a sketch with one bit set, which says nothing of its direction).
TOPIC0 = np.random.default_rng(0).standard_normal(DIM).astype(np.float32)
TOPIC0 /= np.linalg.norm(TOPIC0)


def ask(engine: Engine, user: uuid.UUID, settings: Settings, **kwargs: Any) -> RecallResult:
    return recall_by_vector(engine, user, TOPIC0.tolist(), settings=settings, now=NOW, **kwargs)


def load(db_url: str, user: uuid.UUID, vectors: np.ndarray, *, instance: uuid.UUID | None = None,
         label: str = "m") -> None:
    copy_rows(db_url, ((user, instance, f"{label} {i}", CATS[i % len(CATS)], 0.5,
                        NOW - timedelta(days=i % 300), vectors[i]) for i in range(len(vectors))))


def mirror_mismatches(engine: Engine) -> int:
    """Rows on which ``memory_sketches`` and ``companion_memories`` disagree (either side)."""
    with engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT count(*) FROM (SELECT id, user_id, instance_id, status, embedding_bq,"
            " category FROM engine.companion_memories) m FULL JOIN engine.memory_sketches s"
            " ON s.memory_id = m.id WHERE m.id IS NULL OR s.memory_id IS NULL"
            " OR (m.user_id, m.instance_id, m.status, m.embedding_bq, m.category)"
            " IS DISTINCT FROM (s.user_id, s.instance_id, s.status, s.sketch, s.category)")
        ).scalar_one())


@pytest.fixture
def user() -> uuid.UUID:
    return uuid.uuid4()


def test_the_mirror_follows_every_write(engine: Engine, db_url: str, user: uuid.UUID) -> None:
    rng = np.random.default_rng(1)
    load(db_url, user, topic_vectors(rng, 300, 5)[0])  # COPY
    with engine.begin() as conn:  # INSERT, then UPDATEs of each mirrored column
        a, b, c = add(conn, NOW, *[Mem(user, f"x{i}", "fact", unit(i + 1)) for i in range(3)])
        conn.execute(text("UPDATE engine.companion_memories SET status = 'merged'"
                          " WHERE id = :a"), {"a": a})
        conn.execute(text("UPDATE engine.companion_memories SET instance_id = gen_random_uuid()"
                          " WHERE id = :b"), {"b": b})
        conn.execute(text("UPDATE engine.companion_memories SET embedding = CAST(:v AS vector)"
                          " WHERE id = :c"), {"c": c, "v": str([-x for x in unit(9)])})
        conn.execute(text("UPDATE engine.companion_memories SET importance = 0.9"
                          " WHERE user_id = :u"), {"u": user})  # not mirrored: nothing to do
    assert mirror_mismatches(engine) == 0
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM engine.companion_memories WHERE id = :a"), {"a": a})
        conn.execute(text("INSERT INTO engine.companion_memories (user_id, content, category)"
                          " VALUES (:u, 'no vector yet', 'fact')"), {"u": user})
    assert mirror_mismatches(engine) == 0
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.memory_sketches WHERE user_id = :u"),
                            {"u": user}).scalar_one() == 303


def test_clustering_puts_every_memory_in_a_cell_and_new_ones_join_the_nearest(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    rng = np.random.default_rng(2)
    vectors, _ = topic_vectors(rng, 3_000, 20)
    load(db_url, user, vectors)
    report = recall_cells.cluster_user(engine, CELLS, user)
    assert (report.outcome, report.rows, report.cells) == ("clustered", 3_000, cell_count(3_000))
    with engine.connect() as conn:
        unassigned, total = conn.execute(text(
            "SELECT count(*) FILTER (WHERE cell IS NULL), count(*) FROM engine.memory_sketches"
            " WHERE user_id = :u"), {"u": user}).one()
        sizes = conn.execute(text("SELECT sum(size) FROM engine.memory_cells WHERE user_id = :u"),
                             {"u": user}).scalar_one()
        centroids = np.array([np.asarray(r.centroid) for r in conn.execute(text(
            "SELECT CAST(centroid AS real[]) AS centroid FROM engine.memory_cells"
            " WHERE user_id = :u ORDER BY cell"),
            {"u": user})])
    assert (unassigned, total, sizes) == (0, 3_000, 3_000)
    new = vectors[17] + np.float32(0.01)
    with engine.begin() as conn:
        (mid,) = add(conn, NOW, Mem(user, "new", "fact", new.tolist()))
        cell = conn.execute(text("SELECT cell FROM engine.memory_sketches WHERE memory_id = :m"),
                            {"m": mid}).scalar_one()
    assert cell == int(np.argmax(centroids @ (new / np.linalg.norm(new))))


def test_a_large_user_is_clustered_in_bounded_worker_memory(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    """Trained on a sample and assigned chunk by chunk, the pass holds a fraction of what
    reading every vector at once holds (measured in the same test), and every memory still
    lands in its nearest cell."""
    rng = np.random.default_rng(12)
    load(db_url, user, topic_vectors(rng, 6_000, 30)[0])
    peaks = {}
    for name, kwargs in (("all at once", {"max_train_rows": 10**9, "chunk_rows": 10**9}),
                         ("bounded", {"max_train_rows": 1_000, "chunk_rows": 500})):
        tracemalloc.start()
        report = recall_cells.cluster_user(engine, CELLS, user, **kwargs)
        peaks[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert report.outcome == "clustered" and report.rows == 6_000
    vectors_mb = 6_000 * DIM * 4 / 2**20  # 11.7 MB of float32 vectors
    assert peaks["all at once"] > vectors_mb * 2**20, peaks
    assert peaks["bounded"] < peaks["all at once"] / 3, peaks
    with engine.connect() as conn:  # nearest up to float rounding: numpy's float32 against
        # the server's arithmetic may break a near-tie between two centroids either way
        assert conn.execute(text(
            "SELECT count(*) FROM engine.memory_sketches s"
            " JOIN engine.companion_memories m ON m.id = s.memory_id"
            " LEFT JOIN engine.memory_cells c ON c.user_id = s.user_id AND c.cell = s.cell"
            " WHERE s.user_id = :u AND (c.centroid IS NULL OR (c.centroid <=> m.embedding)"
            "  > (SELECT min(n.centroid <=> m.embedding) FROM engine.memory_cells n"
            "      WHERE n.user_id = s.user_id) + 1e-5)"),
            {"u": user}).scalar_one() == 0


def test_a_row_written_after_the_read_is_assigned_by_the_write(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    rng = np.random.default_rng(3)
    load(db_url, user, topic_vectors(rng, 500, 5)[0])
    with engine.connect() as conn:
        found = cells_sql.user_vectors(conn, user, DIM)
    with engine.begin() as conn:  # arrives between the read and the write; user has no cells
        (late_id,) = add(conn, NOW, Mem(user, "late", "fact", unit(3)))
        assert conn.execute(text("SELECT cell FROM engine.memory_sketches WHERE memory_id = :m"),
                            {"m": late_id}).scalar_one() is None
    clustering = spherical_kmeans(found.vectors, 8, seed=1)
    with engine.begin() as conn:
        late = cells_sql.replace_cells(conn, user, clustering.centroids, clustering.sizes,
                                       found.ids, clustering.assignment.tolist())
        assert late == 1
        assert conn.execute(text("SELECT count(*) FROM engine.memory_sketches"
                                 " WHERE user_id = :u AND cell IS NULL"),
                            {"u": user}).scalar_one() == 0


def test_a_clustered_user_gets_exactly_k_and_the_exact_answer(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    rng = np.random.default_rng(4)
    persona = uuid.uuid4()
    load(db_url, user, topic_vectors(rng, 8_000, 40)[0])
    load(db_url, user, topic_vectors(rng, 2_000, 40)[0], instance=persona, label="p")
    recall_cells.cluster_user(engine, CELLS, user)
    for strategy, k, want in (("grouped", 2, 10), ("decay", 10, 10), ("composite", 7, 7)):
        for scope in ("profile", "both"):
            probed = ask(engine, user, CELLS, strategy=strategy, k=k, scope=scope,
                         instance_id=persona)
            assert probed.plan in ("cells", "mixed") and not probed.exact, strategy
            assert len(probed.memories) == want, (strategy, scope)
            truth = ask(engine, user, EXACT, strategy=strategy, k=k, scope=scope,
                        instance_id=persona)
            assert contents(probed) == contents(truth), (strategy, scope)
    # a share of 1 reads every sketch: the plain quantised plan
    assert ask(engine, user, cfg(recall_exact_scan_below=100, recall_cell_probe_share=1.0),
               strategy="decay").plan == "quantized"


def test_a_row_in_no_cell_is_still_found(engine: Engine, db_url: str, user: uuid.UUID) -> None:
    rng = np.random.default_rng(5)
    load(db_url, user, topic_vectors(rng, 3_000, 30)[0])
    recall_cells.cluster_user(engine, CELLS, user)
    with engine.begin() as conn:  # e.g. written while the user was being re-clustered
        (mid,) = add(conn, NOW, Mem(user, "unassigned", "fact", TOPIC0.tolist()))
        conn.execute(text("UPDATE engine.memory_sketches SET cell = NULL WHERE memory_id = :m"),
                     {"m": mid})
    result = ask(engine, user, CELLS, strategy="decay", k=10)
    assert result.plan == "cells"
    assert "unassigned" in contents(result)


def test_nothing_leaks_across_users_or_personas(engine: Engine, db_url: str,
                                                user: uuid.UUID) -> None:
    rng = np.random.default_rng(6)
    mine, other_persona, neighbour = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    load(db_url, user, topic_vectors(rng, 3_000, 20)[0], instance=mine)
    load(db_url, user, topic_vectors(rng, 3_000, 20)[0], instance=other_persona, label="other")
    load(db_url, neighbour, topic_vectors(rng, 3_000, 20)[0], label="neighbour")
    with engine.begin() as conn:  # the nearest rows of all belong to someone else
        add(conn, NOW, Mem(neighbour, "neighbour's best", "fact", TOPIC0.tolist()),
            Mem(user, "other persona's best", "fact", TOPIC0.tolist(),
                instance_id=other_persona))
    recall_cells.cluster_user(engine, CELLS, user)
    recall_cells.cluster_user(engine, CELLS, neighbour)
    for strategy in ("grouped", "decay", "composite"):
        result = ask(engine, user, CELLS, strategy=strategy, scope="relationship",
                     instance_id=mine)
        assert result.plan in ("cells", "mixed")
        assert all(c.startswith("m ") for c in contents(result)), contents(result)


def test_the_probe_is_an_index_only_scan_of_the_mirror(engine: Engine, db_url: str,
                                                       user: uuid.UUID) -> None:
    rng = np.random.default_rng(7)
    persona, other_persona = uuid.uuid4(), uuid.uuid4()
    load(db_url, user, topic_vectors(rng, 2_000, 20)[0])
    load(db_url, user, topic_vectors(rng, 1_000, 20)[0], instance=persona)
    load(db_url, user, topic_vectors(rng, 1_000, 20)[0], instance=other_persona)
    recall_cells.cluster_user(engine, CELLS, user)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE engine.memory_sketches"))
    for scope in ("profile", "relationship", "both"):
        flt = recall_sql.ScopeFilter(user, scope, persona)  # type: ignore[arg-type]
        with engine.connect() as conn, conn.begin():
            recall_sql.configure_quantized(conn)
            plan = "\n".join(r[0] for r in conn.execute(
                text("EXPLAIN (ANALYZE, COSTS OFF) " + cells_sql.probed_pool_sql(flt))
                .bindparams(recall_sql.query_param(DIM)),
                {**flt.params(), "q": TOPIC0.tolist(), "m": 500, "n": 50, "probes": 13}))
        assert "Index Only Scan using ix_memory_sketches_probe" in plan, plan
        assert "Heap Fetches: 0" in plan, plan
        assert "Rows Removed by Filter" not in plan, plan  # each branch is index ranges
        assert "Seq Scan" not in plan, plan


def far_category_user(db_url: str, engine: Engine, user: uuid.UUID, persona: uuid.UUID
                      ) -> None:
    """A clustered user whose ``event`` memories (3,000 of them, on topics of their own, some
    leaning more towards :data:`TOPIC0` than others) are all far from it, so the pool nearest
    the query holds none of them."""
    rng = np.random.default_rng(11)
    near, _ = topic_vectors(rng, 6_000, 30)
    far = rng.standard_normal((3_000 // 40, DIM)).astype(np.float32)  # 75 topics of 40
    far -= np.outer(far @ TOPIC0, TOPIC0)  # orthogonal to the query's direction …
    far /= np.linalg.norm(far, axis=1, keepdims=True)
    lean = np.linspace(0.0, 0.45, len(far), dtype=np.float32)  # … but for a lean towards it
    far = np.repeat(far * np.sqrt(1 - lean[:, None] ** 2) + np.outer(lean, TOPIC0), 40, axis=0)
    far += rng.standard_normal(far.shape).astype(np.float32) / np.sqrt(DIM) * 0.5
    far /= np.linalg.norm(far, axis=1, keepdims=True)
    cats = [c for c in CATS if c != "event"]
    copy_rows(db_url, [
        *((user, None, f"m {i}", cats[i % len(cats)], 0.5, NOW, near[i])
          for i in range(4_000)),
        *((user, persona, f"p {i}", cats[i % len(cats)], 0.5, NOW, near[i])
          for i in range(4_000, 6_000)),
        *((user, None if i % 3 else persona, f"far {i}", "event", 0.5, NOW, far[i])
          for i in range(len(far)))])
    recall_cells.cluster_user(engine, CELLS, user)


def test_a_category_far_from_the_query_is_completed_as_by_the_whole_range_scan(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    """The walk answers as reading every sketch of the category did (which it replaces): the
    same rows, two of the far category, the other categories exact."""
    persona = uuid.uuid4()
    far_category_user(db_url, engine, user, persona)
    whole = cfg(recall_exact_scan_below=100, recall_cell_probe_share=1.0)
    for scope in ("profile", "both"):
        walked = ask(engine, user, CELLS, strategy="grouped", scope=scope, instance_id=persona)
        assert walked.plan == "mixed", walked.plan  # the pool lacked a category
        scanned = ask(engine, user, whole, strategy="grouped", scope=scope, instance_id=persona)
        assert sorted(contents(walked)) == sorted(contents(scanned)), scope
        assert sum(c.startswith("far ") for c in contents(walked)) == 2
        assert len({m.id for m in walked.memories}) == len(walked.memories) == 10
        truth = ask(engine, user, EXACT, strategy="grouped", scope=scope, instance_id=persona)
        assert ({c for c in contents(walked) if not c.startswith("far ")}
                == {c for c in contents(truth) if not c.startswith("far ")}), scope


def test_the_walk_reads_a_bounded_number_of_the_categorys_rows(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    """EXPLAIN ANALYZE: the completion reads the category's rows in the probed cells and
    ``m`` more, index-only — not its whole range of 3,000 rows (as before issue 17)."""
    persona = uuid.uuid4()
    far_category_user(db_url, engine, user, persona)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE engine.memory_sketches"))
    m, flt = 100, recall_sql.ScopeFilter(user, "both", persona)
    with engine.connect() as conn, conn.begin():
        probes = 3  # of about 95 cells
        in_probed = conn.execute(text(
            "SELECT count(*) FROM engine.memory_sketches WHERE user_id = :u"
            " AND category = 'event' AND cell IN (SELECT cell FROM engine.memory_cells"
            " WHERE user_id = :u ORDER BY centroid <=> CAST(:q AS vector) LIMIT :p)"),
            {"u": user, "q": str(TOPIC0.tolist()), "p": probes}).scalar_one()
        recall_sql.configure_quantized(conn)
        plan = "\n".join(r[0] for r in conn.execute(
            recall_sql.search_statement("EXPLAIN (ANALYZE, COSTS OFF) "
                                        + cells_sql.probed_grouped_sql(flt), DIM,
                                        categories=True),
            {**flt.params(), "q": TOPIC0.tolist(), "categories": ["event"], "k": 2, "m": m,
             "probes": probes}))
    assert "Index Only Scan using ix_memory_sketches_category" in plan, plan
    assert "Heap Fetches: 0" in plan, plan
    read = 0
    for line in plan.splitlines():
        if "ix_memory_sketches_category" in line and "never executed" not in line:
            found = re.search(r"rows=([0-9.]+) loops=(\d+)", line)
            assert found is not None, line
            read += round(float(found.group(1)) * int(found.group(2)))
    assert in_probed < 1_500  # the test means something: most of the category is elsewhere
    assert read <= in_probed + 2 * m, (read, in_probed, plan)


def test_due_users_grow_into_and_out_of_cells(engine: Engine, db_url: str,
                                              user: uuid.UUID) -> None:
    settings = cfg(recall_cell_min_rows=1_000)
    rng = np.random.default_rng(8)
    small = uuid.uuid4()
    load(db_url, user, topic_vectors(rng, 1_200, 10)[0])
    load(db_url, small, topic_vectors(rng, 900, 10)[0])

    def due() -> dict[uuid.UUID, int]:
        return {s.user_id: s.rows for s in recall_cells.due(engine, settings, 100)}

    assert due() == {user: 1_200}
    report = recall_cells.refresh(engine, settings, recall_cells.due(engine, settings, 1)[0])
    assert report.outcome == "clustered"
    assert due() == {}
    grow = int(1_200 * (REGROW_FACTOR - 1)) + 1
    load(db_url, user, topic_vectors(rng, grow, 10)[0], label="more")
    assert due() == {user: 1_200 + grow}
    recall_cells.refresh(engine, settings, recall_cells.due(engine, settings, 1)[0])
    with engine.begin() as conn:  # most memories deleted: a full scan is cheap again
        conn.execute(text("DELETE FROM engine.companion_memories WHERE id IN (SELECT id FROM"
                          " engine.companion_memories WHERE user_id = :u LIMIT 1200)"),
                     {"u": user})
    (state,) = recall_cells.due(engine, settings, 10)
    assert recall_cells.refresh(engine, settings, state).outcome == "dropped"
    with engine.connect() as conn:
        assert cells_sql.user_state(conn, user).cells == 0
        assert conn.execute(text("SELECT count(*) FROM engine.memory_sketches"
                                 " WHERE user_id = :u AND cell IS NOT NULL"),
                            {"u": user}).scalar_one() == 0


def test_replaced_memories_are_left_out_unless_asked_for(engine: Engine, db_url: str,
                                                         user: uuid.UUID) -> None:
    rng = np.random.default_rng(9)
    load(db_url, user, topic_vectors(rng, 3_000, 30)[0])
    with engine.begin() as conn:
        add(conn, NOW, Mem(user, "superseded twin", "fact", TOPIC0.tolist(), status="superseded"))
    recall_cells.cluster_user(engine, CELLS, user)
    current = ask(engine, user, CELLS, strategy="decay")
    assert current.plan == "cells" and "superseded twin" not in contents(current)
    everything = ask(engine, user, CELLS, strategy="decay", include_replaced=True)
    assert everything.plan == "cells" and contents(everything)[0] == "superseded twin"


def _insert_in_thread(engine: Engine, user: uuid.UUID, content: str, hold: threading.Event,
                      done: threading.Event, added: threading.Event | None = None
                      ) -> threading.Thread:
    """Insert one memory (``added`` once the INSERT returned) in a transaction that stays open
    until ``hold`` is set (``done`` once committed)."""
    def run() -> None:
        with engine.begin() as conn:
            add(conn, NOW, Mem(user, content, "fact", TOPIC0.tolist()))
            if added is not None:
                added.set()
            hold.wait(timeout=30)
        done.set()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _cell_of(engine: Engine, content: str) -> tuple[int | None, bool]:
    """The mirror's cell of the memory with ``content``, and whether that cell exists."""
    with engine.connect() as conn:
        row = conn.execute(text(
            "SELECT s.cell, EXISTS (SELECT 1 FROM engine.memory_cells c WHERE c.user_id ="
            " s.user_id AND c.cell = s.cell) AS known FROM engine.memory_sketches s JOIN"
            " engine.companion_memories m ON m.id = s.memory_id WHERE m.content = :c"),
            {"c": content}).one()
    return row.cell, bool(row.known)


def test_an_insert_in_flight_holds_a_reclustering_until_it_commits(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    load(db_url, user, topic_vectors(np.random.default_rng(10), 1_000, 10)[0])
    recall_cells.cluster_user(engine, CELLS, user)
    hold, inserted, added = threading.Event(), threading.Event(), threading.Event()
    writer = _insert_in_thread(engine, user, "in flight", hold, inserted, added)
    assert added.wait(timeout=10)  # the insert's trigger now holds its cell FOR SHARE
    finished: list[recall_cells.ClusterReport] = []
    clusterer = threading.Thread(
        target=lambda: finished.append(recall_cells.cluster_user(engine, CELLS, user)),
        daemon=True)
    clusterer.start()
    clusterer.join(timeout=3)
    assert clusterer.is_alive() and not finished  # the write waits for the insert
    hold.set()
    writer.join(timeout=10)
    clusterer.join(timeout=30)
    assert inserted.is_set() and finished and finished[0].late == 1
    cell, known = _cell_of(engine, "in flight")
    assert cell is not None and known  # re-assigned to a cell of the new clustering


def test_an_insert_during_a_reclustering_waits_and_stays_unassigned(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    load(db_url, user, topic_vectors(np.random.default_rng(11), 1_000, 10)[0])
    recall_cells.cluster_user(engine, CELLS, user)
    with engine.connect() as conn:
        found = cells_sql.user_vectors(conn, user, DIM)
    clustering = spherical_kmeans(found.vectors, 12, seed=2)
    hold, inserted = threading.Event(), threading.Event()
    with engine.begin() as conn:  # a re-clustering's write, caught after it deleted the cells
        cells_sql.replace_cells(conn, user, clustering.centroids, clustering.sizes.tolist(),
                                found.ids, [int(c) for c in clustering.assignment])
        writer = _insert_in_thread(engine, user, "during", hold, inserted)
        hold.set()
        time.sleep(0.5)
        assert not inserted.is_set()  # its trigger waits on a cell being deleted
    writer.join(timeout=10)
    assert inserted.is_set()
    assert _cell_of(engine, "during") == (None, False)  # in no cell: always scanned
    result = ask(engine, user, CELLS, strategy="decay", k=3)
    assert result.plan == "cells" and "during" in contents(result)
