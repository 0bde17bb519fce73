"""Cells and centred sketches for the turns recall layer (0029, issue 31's cost), real
PostgreSQL + pgvector.

What must hold: a clustered user's turns sit in their nearest *memory* cell (placed when the
user is clustered, and by the trigger when a turn is written later); a recall with a probe
share reads the probed cells and the turns in no cell, and only those; a probe that finds fewer
than K turns is re-run over all of them; dropping the user's cells (a pass, a persona forget)
puts every turn back in no cell (read again); a model's centre re-sketches its turns and the
query against it, and only a model whose vectors share a direction gets one.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import Engine, text

from eros.privacy.db import forget_sql
from eros.recall.db import turn_cells_sql, turns_sql
from eros.recall.db.turns_sql import TurnRow
from eros.recall.services import recall_cells, turn_centres
from testkit.data import add_session
from tests.integration.test_recall import cfg
from tests.support.memories import DIM, Mem, add

SETTINGS = cfg(recall_exact_scan_below=100)


def _topics(rng: np.random.Generator, n: int, topics: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors around ``topics`` orthogonal axes, and each one's topic."""
    topic = rng.integers(0, topics, n)
    v = np.zeros((n, DIM), dtype=np.float32)
    v[np.arange(n), topic * 4] = 1.0
    v += rng.standard_normal((n, DIM)).astype(np.float32) * 0.02
    return v / np.linalg.norm(v, axis=1, keepdims=True), topic


def _turns(engine: Engine, user: uuid.UUID, vectors: np.ndarray, model: str = "m1",
           instance: uuid.UUID | None = None) -> list[int]:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", f"turn {i}") for i in range(len(vectors))],
                          user_id=user, instance_id=instance)
        seqs = [int(r[0]) for r in conn.execute(text(
            "SELECT seq FROM engine.chat_messages WHERE session_id = :s ORDER BY seq"),
            {"s": sid})]
        turns_sql.write_turns(conn, [TurnRow(s, sid, user, instance, datetime.now(UTC),
                                             v.tolist(), model)
                                     for s, v in zip(seqs, vectors, strict=True)])
    return seqs


def _clustered_user(engine: Engine, topics: int = 8) -> uuid.UUID:
    rng = np.random.default_rng(5)
    user = uuid.uuid4()
    mv, _ = _topics(rng, 400, topics)
    with engine.begin() as conn:
        add(conn, datetime.now(UTC), *(Mem(user, f"m{i}", "fact", v.tolist())
                                       for i, v in enumerate(mv)))
    return user


def _cells(engine: Engine, seqs: list[int]) -> dict[int, int]:
    with engine.connect() as conn:
        return {int(r.seq): r.cell for r in conn.execute(text(
            "SELECT seq, cell FROM engine.memory_turns WHERE seq = ANY(:s)"), {"s": seqs})}


def _nearest_cell(engine: Engine, user: uuid.UUID, vectors: np.ndarray) -> list[int]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT cell, CAST(centroid AS text) AS c FROM"
                                 " engine.memory_cells WHERE user_id = :u ORDER BY cell"),
                            {"u": user}).all()
    cells = np.array([r.cell for r in rows])
    centroids = np.array([[float(x) for x in r.c.strip("[]").split(",")] for r in rows])
    return [int(c) for c in cells[np.argmax(vectors @ centroids.T, axis=1)]]


def test_turns_sit_in_their_nearest_memory_cell_and_a_probe_reads_only_those(
        engine: Engine) -> None:
    user = _clustered_user(engine)
    rng = np.random.default_rng(6)
    before, topic_before = _topics(rng, 60, 8)
    early = _turns(engine, user, before)
    assert len(set(topic_before)) > 1
    assert set(_cells(engine, early).values()) == {-1}  # no cells yet: always read
    report = recall_cells.cluster_user(engine, SETTINGS, user)
    assert report.cells >= 8
    after, _ = _topics(rng, 20, 8)
    late = _turns(engine, user, after)  # placed by the trigger
    placed = _cells(engine, early + late)
    assert [placed[s] for s in early] == _nearest_cell(engine, user, before)
    assert [placed[s] for s in late] == _nearest_cell(engine, user, after)

    query = before[0]
    probe = _nearest_cell(engine, user, query[None, :])[0]
    with engine.begin() as conn:  # a turn of another cell put in none: read all the same
        conn.execute(text("UPDATE engine.memory_turns SET cell = -1 WHERE seq = :s"),
                     {"s": next(s for s in early if placed[s] != probe)})
    cells = _cells(engine, early + late)
    expected = {s for s, c in cells.items() if c in (probe, -1)}
    # no more than the probe holds: a probe finding fewer than K re-runs over every turn
    # (test_a_short_probe_reads_every_turn_and_dropped_cells_uncell_the_turns)
    k = min(3, len(expected))
    with engine.connect() as conn:
        probed = turns_sql.nearest_turns(conn, user, None, query.tolist(), k, True,
                                         probe_share=0.01)
        read = conn.execute(text(turns_sql.nearest_sql(False, True)), {
            "user_id": user, "instance_id": None, "q": str(query.tolist()), "sensitive": True,
            "pool": 1000, "plain_pool": 1000, "k": 1000, "model": None, "share": 0.01}).all()
        conn.execute(text("SET LOCAL enable_seqscan = off"))  # a small table: seq scans win
        plan = "\n".join(r[0] for r in conn.execute(text(
            "EXPLAIN " + turns_sql.nearest_sql(False, True)), {
            "user_id": user, "instance_id": None, "q": str(query.tolist()), "sensitive": True,
            "pool": 1000, "plain_pool": 1000, "k": 1000, "model": None, "share": 0.01}))
    # the probed cells and the turns in no cell: one index condition, not a filter
    assert any("Index Cond" in line and "cell = ANY" in line for line in plan.splitlines())
    assert {int(r.seq) for r in read} == expected
    assert len(expected) < len(cells) and {t.seq for t in probed} <= expected
    assert probed[0].seq == early[0]


def test_a_short_probe_reads_every_turn_and_dropped_cells_uncell_the_turns(
        engine: Engine) -> None:
    user = _clustered_user(engine)
    persona = uuid.uuid4()
    rng = np.random.default_rng(7)
    vectors, _ = _topics(rng, 40, 8)
    recall_cells.cluster_user(engine, SETTINGS, user)
    seqs = _turns(engine, user, vectors, instance=persona)
    with engine.connect() as conn:
        # the query's own cells hold a few of the persona's turns: the k that exist come back
        got = turns_sql.nearest_turns(conn, user, persona, vectors[0].tolist(), 30, True,
                                      probe_share=0.01)
    assert len(got) == 30
    recall_cells.drop_cells(engine, user)
    assert set(_cells(engine, seqs).values()) == {-1}
    recall_cells.cluster_user(engine, SETTINGS, user)
    assert -1 not in set(_cells(engine, seqs).values())
    with engine.begin() as conn:  # a persona forget drops the cells of forgotten memories
        forget_sql.lock_user(conn, user)
        assert forget_sql.drop_cells(conn, user)
    assert set(_cells(engine, seqs).values()) == {-1}


def test_a_centre_re_sketches_the_models_turns_and_only_a_shared_direction_gets_one(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    user = uuid.uuid4()
    shared = rng.standard_normal(DIM).astype(np.float32)
    leaning = shared / np.linalg.norm(shared) + rng.standard_normal((50, DIM)).astype(
        np.float32) * 0.03  # one direction: a mean of norm ~0.9
    leaning /= np.linalg.norm(leaning, axis=1, keepdims=True)
    spread = rng.standard_normal((50, DIM)).astype(np.float32)
    spread /= np.linalg.norm(spread, axis=1, keepdims=True)
    lean_seqs = _turns(engine, user, leaning, model="leaning")
    _turns(engine, user, spread, model="spread")
    monkeypatch.setattr(turn_centres, "MIN_TURNS", 10)
    assert turn_centres.ensure_centres(engine) == {"leaning": 50, "spread": 0}
    assert turn_centres.ensure_centres(engine) == {}  # set once
    centre = leaning.mean(axis=0)
    with engine.connect() as conn:
        stored = conn.execute(text(
            "SELECT t.embedding_bq = binary_quantize(t.embedding - c.centre) AS centred,"
            " t.embedding_bq = binary_quantize(t.embedding) AS plain"
            " FROM engine.memory_turns t LEFT JOIN engine.turn_sketch_centres c"
            " ON c.embedding_model = t.embedding_model ORDER BY t.seq")).all()
        models = [tuple(r) for r in conn.execute(text(
            "SELECT embedding_model, centre IS NULL FROM engine.turn_sketch_centres"
            " ORDER BY 1"))]
    assert models == [("leaning", False), ("spread", True)]
    assert all(r.centred for r in stored[:50]) and all(r.plain for r in stored[50:])
    assert not any(r.centred for r in stored[50:])  # no centre: NULL, never equal
    # the sketch splits the leaning turns again: their bits differ where the plain ones agree
    bits = np.sign(leaning - centre) > 0
    assert 0.3 < bits.mean() < 0.7
    # a turn written now is sketched against the centre; the query too: the exact top K
    late = _turns(engine, user, leaning[:3] * 0.9 + centre * 0.1, model="leaning")
    assert all(r.centred for r in _sketches(engine, late))
    with engine.connect() as conn:
        got = turns_sql.nearest_turns(conn, user, None, leaning[5].tolist(), 5, True,
                                      pool=20, embedding_model="leaning")
    exact = sorted(range(50), key=lambda i: -float(leaning[i] @ leaning[5]))[:5]
    assert [t.seq for t in got][:1] == [lean_seqs[exact[0]]]
    with engine.connect() as conn:  # no model given (a user on one model): the user's model's
        query_bits = conn.execute(text(  # centre, read from their turns
            "SELECT binary_quantize(CAST(:q AS halfvec) - c.centre) AS b FROM"
            " engine.turn_sketch_centres c WHERE c.centre IS NOT NULL"),
            {"q": str(leaning[5].tolist())}).scalar_one()
        plan = conn.execute(text("EXPLAIN (ANALYZE, VERBOSE) " + turns_sql.nearest_sql(
            False, False)), {"user_id": user, "instance_id": None, "q": str(leaning[5].tolist()),
                             "sensitive": True, "pool": 20, "plain_pool": 20, "k": 5, "model": None,
                             "share": 1.0}).all()
    assert query_bits is not None and any("turn_sketch_centres" in r[0] for r in plan)
    with engine.begin() as conn:
        turn_cells_sql.drop_centres(conn)


def _sketches(engine: Engine, seqs: list[int]) -> list[object]:
    with engine.connect() as conn:
        return list(conn.execute(text(
            "SELECT t.embedding_bq = binary_quantize(t.embedding - c.centre) AS centred"
            " FROM engine.memory_turns t JOIN engine.turn_sketch_centres c"
            " ON c.embedding_model = t.embedding_model WHERE t.seq = ANY(:s)"), {"s": seqs}))


def test_fused_reads_the_turns_of_the_probed_cells_when_the_memories_were_probed(
        engine: Engine) -> None:
    from eros.recall import recall_by_vector

    user = _clustered_user(engine)
    recall_cells.cluster_user(engine, SETTINGS, user)
    rng = np.random.default_rng(9)
    vectors, _ = _topics(rng, 200, 8)
    seqs = _turns(engine, user, vectors)
    query = vectors[0]
    with engine.connect() as conn:  # a cell number no centroid has: no probe reads it
        far = int(conn.execute(text("SELECT max(cell) FROM engine.memory_cells"
                                    " WHERE user_id = :u"), {"u": user}).scalar_one()) + 1
    assert far > max(_cells(engine, seqs).values())
    with engine.begin() as conn:
        conn.execute(text("UPDATE engine.memory_turns SET cell = :c WHERE seq = :s"),
                     {"c": far, "s": seqs[0]})

    def turns(share: float) -> set[int]:
        cfg_ = SETTINGS.model_copy(update={"recall_turn_probe_share": share,
                                           "recall_turn_candidates": 2,  # no short probe
                                           "recall_candidates": 20})  # nor a short pool
        result = recall_by_vector(engine, user, query.tolist(), strategy="fused",
                                  settings=cfg_, k=4)
        assert share == 1.0 or result.plan == "cells"  # the memories were probed
        return {t.seq for t in result.turns}
    assert seqs[0] not in turns(0.1)  # its cell is not probed: not read
    assert seqs[0] in turns(1.0)  # every turn read: the nearest one is there


def _leaning(rng: np.random.Generator, n: int, spread: float = 0.03) -> np.ndarray:
    """``n`` unit vectors around one shared direction (a mean of norm ~0.9, as e5's; nearer
    1 with a smaller ``spread``)."""
    shared = rng.standard_normal(DIM).astype(np.float32)
    v = shared / np.linalg.norm(shared) + rng.standard_normal((n, DIM)).astype(
        np.float32) * spread
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _state(engine: Engine, model: str) -> tuple[object, list[tuple[int, bool]]]:
    """The model's re-sketch mark and, per turn (by seq), whether it is sketched centred."""
    with engine.connect() as conn:
        below = conn.execute(text("SELECT resketch_below FROM engine.turn_sketch_centres"
                                  " WHERE embedding_model = :m"), {"m": model}).scalar_one()
        rows = conn.execute(text(
            "SELECT t.seq, t.embedding_bq = binary_quantize(t.embedding - c.centre) AS centred"
            " FROM engine.memory_turns t JOIN engine.turn_sketch_centres c"
            " ON c.embedding_model = t.embedding_model WHERE t.embedding_model = :m"
            " ORDER BY t.seq"), {"m": model}).all()
    return below, [(int(r.seq), bool(r.centred)) for r in rows]


def test_turns_are_re_sketched_in_batches_and_the_search_reads_both_kinds_meanwhile(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting a centre rewrites no turn: the turns below the mark are re-sketched
    ``BATCH`` a transaction from the top down, and until the mark has passed a turn, the
    search compares its (uncentred) sketch with the query's uncentred one — so with a pool
    far smaller than the turns, a turn on either side of the mark is found exactly. (These
    vectors share their direction so strongly that an uncentred turn compared with the
    centred query sketch ranks 4th and 13th for turns 0 and 20: a pool of 2 misses them.)"""
    model = "leaning-batches"
    vectors = _leaning(np.random.default_rng(21), 60, spread=0.003)
    user = uuid.uuid4()
    seqs = _turns(engine, user, vectors, model=model)
    monkeypatch.setattr(turn_centres, "MIN_TURNS", 10)
    monkeypatch.setattr(turn_centres, "BATCH", 25)
    try:
        assert turn_centres.ensure_centres(engine, max_seconds=0) == {model: 0}
        below, sketches = _state(engine, model)
        assert below == max(seqs) + 1 and not any(c for _, c in sketches)

        def top(i: int) -> int:
            with engine.connect() as conn:
                got = turns_sql.nearest_turns(conn, user, None, vectors[i].tolist(), 1, True,
                                              pool=2, embedding_model=model)
            return got[0].seq

        with engine.begin() as conn:
            assert turn_cells_sql.resketch_batch(conn, model, 25) == (25, True)
        below, sketches = _state(engine, model)
        assert below == seqs[35]
        assert [c for _, c in sketches] == [False] * 35 + [True] * 25
        assert [top(i) for i in (0, 20, 34, 35, 50, 59)] == [
            seqs[i] for i in (0, 20, 34, 35, 50, 59)]
        assert turn_centres.resketch(engine, model) == (35, False)
        below, sketches = _state(engine, model)
        assert below is None and all(c for _, c in sketches)
        assert [top(i) for i in (0, 34, 59)] == [seqs[i] for i in (0, 34, 59)]
    finally:
        with engine.begin() as conn:
            turn_cells_sql.drop_centres(conn)


def test_a_centre_waits_for_a_turn_written_without_it_and_re_sketches_that_turn(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn writer's trigger read "no centre" and its transaction is still open when the
    centre is set: setting it waits for that writer (the trigger holds the model's lock
    shared), so the turn is below the mark and re-sketched. Without the lock the centre
    committed first, its mark below the open turn, and the turn kept its uncentred sketch —
    ranked against the wrong query sketch for good."""
    model = "leaning-race"
    vectors = _leaning(np.random.default_rng(22), 21)
    user = uuid.uuid4()
    _turns(engine, user, vectors[:20], model=model)
    monkeypatch.setattr(turn_centres, "MIN_TURNS", 10)
    writer = engine.connect()
    try:
        tx = writer.begin()
        sid = add_session(writer, [("user", "written while the centre is set")], user_id=user)
        late = int(writer.execute(text("SELECT seq FROM engine.chat_messages"
                                       " WHERE session_id = :s"), {"s": sid}).scalar_one())
        turns_sql.write_turns(writer, [TurnRow(late, sid, user, None, datetime.now(UTC),
                                               vectors[20].tolist(), model)])
        centring = threading.Thread(target=turn_centres.ensure_centres, args=(engine,),
                                    kwargs={"max_seconds": 0})
        centring.start()

        def waiting_for_the_writer() -> bool:
            with engine.connect() as conn:
                return bool(conn.execute(text(
                    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
                    " AND mode = 'ExclusiveLock' AND NOT granted)")).scalar_one())

        deadline = time.monotonic() + 15
        while centring.is_alive() and not waiting_for_the_writer():
            assert time.monotonic() < deadline, "the centre neither waited nor finished"
            time.sleep(0.02)
        tx.commit()
        centring.join(15)
        assert not centring.is_alive()
        turn_centres.resketch(engine, model)
        below, sketches = _state(engine, model)
        assert below is None
        assert dict(sketches)[late], "the turn written meanwhile kept its uncentred sketch"
        assert all(c for _, c in sketches)
    finally:
        writer.close()
        with engine.begin() as conn:
            turn_cells_sql.drop_centres(conn)


def test_a_prepared_turn_search_with_no_model_reads_the_index_only(engine: Engine) -> None:
    """Recall passes no model for a user on one model (nearly everyone), and psycopg prepares
    a statement from its sixth run on a connection: the generic plan must still pre-scan the
    sketches from the index alone. A scope that may or may not filter by model
    (``:model IS NULL OR t.embedding_model = :model``) keeps that filter in the generic plan,
    and ``embedding_model`` is not in the index: every pre-scanned turn was read from the heap
    (twice the turn search's CPU, bench/RESULTS.md)."""
    user = uuid.uuid4()
    _turns(engine, user, _topics(np.random.default_rng(23), 50, 4)[0])
    sql = turns_sql.nearest_sql(False, False)
    names = list(dict.fromkeys(re.findall(r"(?<![:\w]):(\w+)", sql)))
    positional = re.sub(r"(?<![:\w]):(\w+)", lambda m: f"${names.index(m.group(1)) + 1}", sql)
    values = {"user_id": str(user), "q": str(np.ones(DIM).tolist()), "sensitive": "true",
              "pool": "300", "plain_pool": "400", "k": "5", "model": None}
    types = {"user_id": "uuid", "q": "text", "sensitive": "boolean", "pool": "bigint",
             "plain_pool": "bigint", "k": "bigint", "model": "text"}
    args = ", ".join("NULL" if values[n] is None else f"'{values[n]}'" for n in names)
    with engine.begin() as conn:
        conn.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
        conn.execute(text("SET LOCAL enable_seqscan = off"))  # a small table: seq scans win
        conn.exec_driver_sql(f"PREPARE nearest_turns_generic ({', '.join(types[n] for n in names)})"
                             f" AS {positional}")
        plan = "\n".join(r[0] for r in conn.exec_driver_sql(
            f"EXPLAIN EXECUTE nearest_turns_generic({args})"))
        conn.exec_driver_sql("DEALLOCATE nearest_turns_generic")
    assert "Index Only Scan using ix_memory_turns_recall" in plan, plan
    assert "embedding_model = $" not in plan, plan
