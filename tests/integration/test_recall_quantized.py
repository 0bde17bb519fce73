"""Recall's quantised plan against real PostgreSQL + pgvector (migrations 0006, 0007).

A large scope is searched by Hamming distance between pgvector ``binary_quantize`` sketches
(an index-only scan of ``ix_companion_memories_recall_bq``) and re-ranked by exact cosine.
These tests pin what that plan must keep from the others: exactly K rows, the same answer as
the exact scan where the matches are clear, no leaks across users or personas, categories the
pool lacks completed, and a sketch that always agrees with its vector.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, text

from eros.recall.db import recall_sql
from tests.integration.test_recall import CATS, NOW, _bulk, cfg, contents, run
from tests.support.memories import QUERY, Mem, add, at_cosine, copy_rows, near_query, random_unit

QUANTIZED = cfg(recall_exact_scan_below=100)
EXACT = cfg(recall_exact_scan_below=10**9)


@pytest.fixture
def user() -> uuid.UUID:
    return uuid.uuid4()


def test_a_user_with_10000_memories_gets_exactly_k_and_the_exact_answer(
        engine: Engine, db_url: str, user: uuid.UUID) -> None:
    rng = np.random.default_rng(17)
    _bulk(db_url, user, random_unit(rng, 10_000), CATS, label="noise")
    _bulk(db_url, uuid.uuid4(), near_query(rng, 3_000, 0.95), CATS, label="other")
    with engine.begin() as conn:  # three clear matches per category among the 10,000
        add(conn, NOW, *[Mem(user, f"{c} {cos}", c, at_cosine(cos, 10 * i + j + 1))
                         for i, c in enumerate(CATS) for j, cos in enumerate((0.8, 0.7, 0.6))])
    for strategy, k, want in (("grouped", 2, 10), ("decay", 10, 10), ("composite", 7, 7)):
        fast = run(engine, user, QUANTIZED, strategy=strategy, k=k)
        assert fast.plan == "quantized" and not fast.exact, strategy
        assert len(fast.memories) == want, strategy
        truth = run(engine, user, EXACT, strategy=strategy, k=k)
        assert truth.plan == "exact"
        assert contents(fast) == contents(truth), strategy
        # re-ranked by the true cosine, not by the sketch's Hamming distance
        assert [m.similarity for m in fast.memories] == pytest.approx(
            [m.similarity for m in truth.memories], abs=1e-6)
    assert contents(run(engine, user, QUANTIZED, strategy="grouped")) == [
        f"{c} {cos}" for c in CATS for cos in (0.8, 0.7)]


def test_the_plan_is_an_index_only_scan_of_the_sketch_index(engine: Engine, db_url: str,
                                                            user: uuid.UUID) -> None:
    rng = np.random.default_rng(3)
    persona, other_persona = uuid.uuid4(), uuid.uuid4()
    _bulk(db_url, user, random_unit(rng, 2_000), CATS)
    _bulk(db_url, user, random_unit(rng, 1_000), CATS, instance=persona)
    _bulk(db_url, user, random_unit(rng, 1_000), CATS, instance=other_persona)
    _bulk(db_url, uuid.uuid4(), random_unit(rng, 3_000), CATS)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE engine.companion_memories"))  # the visibility map
    for scope in ("profile", "relationship", "both"):
        flt = recall_sql.ScopeFilter(user, scope, persona)  # type: ignore[arg-type]
        for sql, extra in ((recall_sql.quantized_pool_sql(flt), {"n": 50}),
                           (recall_sql.quantized_grouped_sql(flt),
                            {"k": 2, "categories": CATS})):
            with engine.connect() as conn, conn.begin():
                recall_sql.configure_quantized(conn)
                plan = "\n".join(r[0] for r in conn.execute(
                    text("EXPLAIN (ANALYZE, COSTS OFF) " + sql).bindparams(
                        recall_sql.query_param(512), *([recall_sql._CATEGORIES]
                                                       if "categories" in extra else [])),
                    {**flt.params(), "q": QUERY, "m": 500, **extra}))
            assert "Index Only Scan using ix_companion_memories_recall_bq" in plan, plan
            assert "InitPlan" in plan, plan  # the query's sketch is computed once
            assert "Heap Fetches: 0" in plan, plan
            # every layer is one index range: no other persona's sketch is read and dropped
            assert "Rows Removed by Filter" not in plan, plan
            assert plan.count("Index Only Scan") == (2 if scope == "both" else 1), plan


def _numbered(sql: str) -> str:
    """The statement with ``$n`` placeholders, as a prepared statement has them."""
    for i, (name, cast) in enumerate((("user_id", "uuid"), ("instance_id", "uuid"),
                                      ("q", "vector"), ("m", "int"), ("n", "int"),
                                      ("k", "int"), ("categories", "text[]")), start=1):
        sql = sql.replace(f":{name}", f"CAST(${i} AS {cast})")
    return sql


def test_a_generic_plan_keeps_the_index_only_scans(engine: Engine, db_url: str,
                                                   user: uuid.UUID) -> None:
    """psycopg prepares a statement run 5 times and PostgreSQL may then cache a plan made
    without the parameters' values. Such a plan once read a heavy persona's rows through a
    non-covering index on the same columns (a heap fetch per memory, 10x slower); the sketch
    index is now the only index on (user, layer), so every plan must scan it index-only."""
    rng = np.random.default_rng(5)
    persona = uuid.uuid4()
    _bulk(db_url, user, random_unit(rng, 2_000), CATS)
    _bulk(db_url, user, random_unit(rng, 2_000), CATS, instance=persona)
    others = [(uuid.uuid4(), uuid.uuid4()) for _ in range(300)]  # a user is a small share
    copy_rows(db_url, ((u, i if n % 2 else None, f"other {n}", CATS[n % len(CATS)], 0.5, NOW, v)
                       for n, ((u, i), v) in enumerate(zip(others * 20,
                                                          random_unit(rng, 6_000),
                                                          strict=True))))
    flt = recall_sql.ScopeFilter(user, "both", persona)
    for sql in (recall_sql.quantized_pool_sql(flt), recall_sql.quantized_grouped_sql(flt)):
        with engine.connect() as conn, conn.begin():
            recall_sql.configure_quantized(conn)
            plan = "\n".join(r[0] for r in conn.execute(text(
                "EXPLAIN (GENERIC_PLAN, COSTS OFF) " + _numbered(sql))))
        scans = [line.strip() for line in plan.splitlines() if " on companion_memories" in line]
        assert len(scans) == 3, plan  # two layers' sketches, then the re-rank's rows
        assert all("Index Only Scan using ix_companion_memories_recall_bq" in line
                   for line in scans[:2]), plan
        assert "companion_memories_pkey" in scans[2], plan


@pytest.mark.parametrize("strategy", ["grouped", "decay", "composite"])
def test_the_quantized_plan_never_leaks_across_users_or_personas(
        engine: Engine, db_url: str, user: uuid.UUID, strategy: str) -> None:
    rng = np.random.default_rng(23)
    alice, bob = uuid.uuid4(), uuid.uuid4()
    _bulk(db_url, user, near_query(rng, 300, 0.2), CATS, label="profile")
    _bulk(db_url, user, near_query(rng, 300, 0.2), CATS, instance=alice, label="alice")
    _bulk(db_url, user, near_query(rng, 300, 0.99), CATS, instance=bob, label="bob")
    _bulk(db_url, uuid.uuid4(), near_query(rng, 2_000, 0.99), CATS, instance=alice,
          label="stranger")

    def got(**kw: Any) -> set[str]:
        result = run(engine, user, QUANTIZED, strategy=strategy, **kw)
        assert result.plan in ("quantized", "mixed"), (kw, result.plan)
        assert len(result.memories) == 10
        return {m.content.split()[0] for m in result.memories}

    assert got(scope="both", instance_id=alice) <= {"profile", "alice"}
    assert got(scope="relationship", instance_id=alice) == {"alice"}
    assert got(scope="profile", instance_id=bob) == {"profile"}
    assert got(scope="both") == {"profile"}
    assert got(scope="relationship", instance_id=bob) == {"bob"}


def test_grouped_completes_a_category_the_quantized_pool_lacks(
        engine: Engine, db_url: str, user: uuid.UUID,
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(29)
    _bulk(db_url, user, random_unit(rng, 1_000), CATS)
    with engine.begin() as conn:
        add(conn, NOW, *[Mem(user, f"{c} {cos}", c, at_cosine(cos, 10 * i + j + 1))
                         for i, c in enumerate(CATS) for j, cos in enumerate((0.8, 0.7))])
    real_pool = recall_sql.quantized_pool

    def pool_without_events(conn: Any, flt: Any, query: Any, n: int, m: int) -> Any:
        rows = [c for c in real_pool(conn, flt, query, 2 * n, m) if c.category != "event"]
        return rows[:n]

    monkeypatch.setattr(recall_sql, "quantized_pool", pool_without_events)
    result = run(engine, user, QUANTIZED, strategy="grouped")
    assert result.plan == "mixed" and not result.fallback
    assert contents(result) == [f"{c} {cos}" for c in CATS for cos in (0.8, 0.7)]


def test_replaced_memories_are_left_out_unless_asked_for(engine: Engine, db_url: str,
                                                         user: uuid.UUID) -> None:
    """The sketch index covers every status (0007): include_replaced is a quantised scan too."""
    rng = np.random.default_rng(31)
    _bulk(db_url, user, random_unit(rng, 500), CATS)
    with engine.begin() as conn:
        add(conn, NOW, Mem(user, "merged", "fact", at_cosine(0.99, 1), status="merged"))
    current = run(engine, user, QUANTIZED, strategy="decay")
    assert current.plan == "quantized" and "merged" not in contents(current)
    everything = run(engine, user, QUANTIZED, strategy="decay", include_replaced=True)
    assert everything.plan == "quantized"
    assert contents(everything)[0] == "merged"


def test_capped_counts_add_up_the_layers_in_scope(engine: Engine, db_url: str,
                                                  user: uuid.UUID) -> None:
    """Counted one layer after the other, each only as far as the cap leaves (0007)."""
    rng = np.random.default_rng(37)
    alice, bob = uuid.uuid4(), uuid.uuid4()
    _bulk(db_url, user, random_unit(rng, 30), CATS)
    _bulk(db_url, user, random_unit(rng, 40), CATS, instance=alice)
    _bulk(db_url, user, random_unit(rng, 50), CATS, instance=bob)

    def count(scope: str, instance: uuid.UUID | None, below: int) -> int:
        flt = recall_sql.ScopeFilter(user, scope, instance)  # type: ignore[arg-type]
        with engine.connect() as conn:
            return recall_sql.scope_count(conn, flt, exact_below=below, need=1,
                                          max_scan_tuples=None).rows

    assert count("both", alice, 1000) == 70
    assert count("both", bob, 1000) == 80
    assert count("relationship", bob, 1000) == 50
    assert count("both", None, 1000) == 30  # no persona: the profile layer alone
    assert count("both", alice, 50) == 50  # capped: the profile's 30, then 20 of alice's
    assert count("both", alice, 20) == 20  # the cap is reached within the profile
    with engine.connect() as conn:
        counts = recall_sql.category_counts(
            conn, recall_sql.ScopeFilter(user, "both", alice), CATS, exact_below=1000, need=1,
            max_scan_tuples=None)
    assert counts.per_category == {c: 14 for c in CATS} and counts.rows == 70


def test_the_sketch_follows_the_vector(engine: Engine, user: uuid.UUID) -> None:
    """A generated column: written by every INSERT and re-written when consolidation
    re-embeds, whoever writes the row."""
    with engine.begin() as conn:
        [mid] = add(conn, NOW, Mem(user, "m", "fact", at_cosine(0.6, 1)))
        same = ("SELECT embedding_bq = CAST(binary_quantize(embedding) AS bit(512)),"
                " bit_count(embedding_bq) FROM engine.companion_memories WHERE id = :id")
        assert conn.execute(text(same), {"id": mid}).one() == (True, 2)
        conn.execute(text("UPDATE engine.companion_memories SET embedding ="
                          " CAST(:v AS vector) WHERE id = :id"),
                     {"id": mid, "v": "[" + ",".join(["-1"] * 511 + ["1"]) + "]"})
        assert conn.execute(text(same), {"id": mid}).one() == (True, 1)
