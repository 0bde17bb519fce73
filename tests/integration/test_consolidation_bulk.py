"""The bulk first pass (issue 34) decides exactly what today's per-memory passes decide.

One user of the consolidation bench's corpus (bench/consolidation_data.py: 20% written as
near-duplicates — exact copies and restatements at cosine ≈ 0.95), cut into recall cells; the
database is copied, today's passes (each chunk's neighbours searched per memory through the
cells) run on one copy until the backlog is empty, the bulk first pass (the neighbours of every
memory read at once) on the other. The same memories must end merged or superseded into the
same results, the same canonical rows written, the same history — "the same" as today's cells
search, not as an exact all-pairs search."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url

from bench.consolidation_data import load
from eros.consolidation.db.consolidation_sql import uncompared_page, unique_pairs
from eros.consolidation.services.consolidate import Consolidator, consolidate
from eros.consolidation.services.consolidation_bulk import (
    bulk_due,
    bulk_neighbours,
    first_pass,
    read_chunk,
)
from eros.consolidation.services.consolidation_read import choose_search, search_pairs
from eros.consolidation.services.consolidation_report import ConsolidationReport
from eros.providers.offline.hashing import hash_embedding
from eros.providers.offline.heuristic import offline_consolidation_reply
from eros.recall.db import cells_sql
from eros.recall.services import recall_cells
from eros.settings import Settings, load_settings
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.fakes.llm_server import Reply, last_user_text
from testkit.services import TemplateDatabases, with_database
from tests.support.classify import fake_consolidator

USER = uuid.UUID(int=1000, version=4)
DIM = 512


def _merge_every_cluster(request: dict[str, Any]) -> Reply:
    """The model's answer: every cluster merges into its newest member's text (deterministic,
    so both copies get the same answers to the same requests)."""
    reply = json.loads(offline_consolidation_reply(last_user_text(request)))
    for item in reply["clusters"]:  # a new text: a canonical row is written
        item["canonical"]["content"] += " (consolidated)"
    return Reply(json.dumps(reply))


def _settings(url: str, llm: FakeLLMServer, voyage: FakeVoyageServer) -> Settings:
    # above CONSOLIDATION_EXACT_BELOW and clustered: today's search is the cells search
    return load_settings(database_url=url, openrouter_api_key="k", openrouter_base_url=llm.url,
                         voyage_api_key="k", voyage_base_url=voyage.url,
                         provider_max_retries=0, consolidation_exact_below=300)


def _ids() -> Callable[[], uuid.UUID]:
    counter = itertools.count(1)
    return lambda: uuid.UUID(int=next(counter), version=4)


def _decisions(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT id, status, replaced_by, content, category FROM engine.companion_memories"
            " ORDER BY id")).all()
        history = conn.execute(text(
            "SELECT action, result_id, source_ids FROM engine.memory_history"
            " ORDER BY result_id, action")).all()
        backlog = conn.execute(text(
            "SELECT count(*) FROM engine.consolidation_backlog")).scalar_one()
    return {"rows": [tuple(r) for r in rows],
            "history": [(r.action, r.result_id, sorted(map(str, r.source_ids)))
                        for r in history], "backlog": backlog}


def _run(url: str, llm: FakeLLMServer, voyage: FakeVoyageServer,
         run: Callable[[Consolidator], list[ConsolidationReport]]
         ) -> tuple[dict[str, Any], list[ConsolidationReport]]:
    engine = create_engine(url, pool_size=2)
    try:
        settings = _settings(url, llm, voyage)
        c = fake_consolidator(settings, engine)
        reports = run(c)
        return _decisions(engine), reports
    finally:
        engine.dispose()


def _today(c: Consolidator) -> list[ConsolidationReport]:
    """Today's passes until the backlog is empty (what the task's re-enqueueing does)."""
    new_id = _ids()
    reports = [consolidate(c, USER, new_id=new_id)]
    while reports[-1].backlog and reports[-1].compared:
        reports.append(consolidate(c, USER, new_id=new_id))
    return reports


def _same_pairs(engine: Engine) -> None:
    """Pair for pair, from every memory's search: the bulk read's directed near rows are
    today's, with few probes and at a looser threshold too (where the probed cells matter)."""
    for probes, similarity in ((1, 0.85), (2, 0.6), (8, 0.85)):
        s = load_settings(consolidation_exact_below=300, consolidation_cell_probes=probes,
                          consolidation_similarity=similarity)
        with engine.connect() as conn, conn.begin():
            nb = bulk_neighbours(conn, s, USER)
            ids = nb.ids
            today = set(search_pairs(conn, USER, ids, s, search="cells"))
        bulk = set(unique_pairs([(a, b) for a in ids for b in nb.near.get(a, ())]))
        assert today and bulk == today, (probes, similarity)


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _clustered_user(engine: Engine, chunk_size: int) -> Settings:
    """900 memories of USER (seed 7) in recall cells; the settings a bulk pass reads them with."""
    load(_conninfo(str(engine.url.render_as_string(hide_password=False))), [USER], 900,
         seed=7)
    recall_cells.cluster_user(engine, load_settings(), USER)
    return load_settings(consolidation_exact_below=300, consolidation_chunk_size=chunk_size,
                         consolidation_max_clusters=500)


def check_bulk_matches_today(templates: TemplateDatabases, llm: FakeLLMServer,
                             voyage: FakeVoyageServer, size: int,
                             extra: Callable[[Engine], None] | None = None
                             ) -> tuple[dict[str, Any], list[ConsolidationReport]]:
    """Load ``size`` memories (and ``extra`` rows), copy the database, run both paths,
    compare; returns the bulk path's end state and reports."""
    llm.set_responder(_merge_every_cluster)
    today_url = templates.clone()
    load(_conninfo(today_url), [USER], size, seed=1000)
    if extra is not None:
        extra_engine = create_engine(today_url, pool_size=1)
        try:
            extra(extra_engine)
        finally:
            extra_engine.dispose()
    engine = create_engine(today_url, pool_size=1)
    try:
        cells = recall_cells.cluster_user(engine, load_settings(), USER)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE engine.memory_sketches"))
        _same_pairs(engine)
        with engine.connect() as conn:  # the task's choice: a whole clustered backlog is due
            assert bulk_due(conn, load_settings(consolidation_exact_below=300), USER)
            assert not bulk_due(conn, load_settings(consolidation_exact_below=300,
                                                    consolidation_chunk_size=2 * size), USER)
    finally:
        engine.dispose()
    bulk_name = f"eros_b_{uuid.uuid4().hex[:10]}"
    with templates.admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{bulk_name}" TEMPLATE'
                          f' "{make_url(today_url).database}"'))
    bulk_url = with_database(templates.server_url, bulk_name)
    templates.created.append(bulk_name)
    try:
        today, today_reports = _run(today_url, llm, voyage, _today)
        bulk, bulk_reports = _run(bulk_url, llm, voyage,
                                  lambda c: first_pass(c, USER, new_id=_ids(), force=True))
    finally:
        templates.drop(bulk_url)
        templates.drop(today_url)
    assert cells.cells >= 4
    assert {r.search for r in today_reports} == {"cells"}
    assert "bulk_read" in bulk_reports[0].timings  # the bulk read was used, not today's
    # its one snapshot is the read of the rows: the products run after it is closed
    assert 0 < bulk_reports[0].timings["bulk_snapshot"] <= bulk_reports[0].timings["bulk_read"]
    assert len(today_reports) >= 3  # several chunks: later ones meet earlier decisions
    merged = sum(r.merged for r in today_reports)
    assert merged >= size // 10
    assert today["backlog"] == bulk["backlog"] == 0
    assert [r.merged for r in bulk_reports] == [r.merged for r in today_reports]
    assert [r.compared for r in bulk_reports] == [r.compared for r in today_reports]
    assert bulk["rows"] == today["rows"]
    assert bulk["history"] == today["history"]
    assert json.dumps([r.cluster_view for r in bulk_reports], default=str) == \
        json.dumps([r.cluster_view for r in today_reports], default=str)
    return bulk, bulk_reports


def test_the_bulk_first_pass_decides_what_todays_passes_decide(
        templates: TemplateDatabases, llm: FakeLLMServer, voyage: FakeVoyageServer) -> None:
    check_bulk_matches_today(templates, llm, voyage, 1200)


TEA = "likes green tea with honey"


def _restated_after_its_merge(engine: Engine) -> None:
    """Two old near-twins (merged by an early pass into a canonical row, whose vector is its
    text's: the fake embedder hashes the text) and a late memory restating that canonical
    text — near the canonical row only, so only a later chunk's search finds it, against a
    row written after the bulk read."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal(DIM)
    base /= np.linalg.norm(base)
    twin = base + 0.3 * rng.standard_normal(DIM) / np.sqrt(DIM)
    rows = [(TEA, base, 729), (TEA + " (said again)", twin / np.linalg.norm(twin), 728),
            ("late restatement", np.array(hash_embedding(TEA + " (said again) (consolidated)",
                                                         DIM)), 1)]
    with engine.begin() as conn:
        for content, vector, days in rows:
            conn.execute(text(
                "INSERT INTO engine.companion_memories (user_id, content, category, importance,"
                " embedding, embedding_model, created_at)"
                " VALUES (:u, :c, 'preference', 0.5, :e, :m, now() - make_interval(days => :d))"),
                {"u": USER, "c": content, "e": str([float(x) for x in vector]),
                 "m": load_settings().embedding_model, "d": days})


def test_a_canonical_row_written_during_the_run_is_found_by_later_chunks(
        templates: TemplateDatabases, llm: FakeLLMServer, voyage: FakeVoyageServer) -> None:
    bulk, _ = check_bulk_matches_today(templates, llm, voyage, 1200,
                                       extra=_restated_after_its_merge)
    by_content = {r[3]: r for r in bulk["rows"]}
    canonical = by_content[TEA + " (said again) (consolidated)"]
    late = by_content["late restatement"]
    # the twins merged into a canonical row, and the late memory met that row (one the bulk
    # read never saw) and was merged with it into another
    assert by_content[TEA][2] == by_content[TEA + " (said again)"][2] == canonical[0]
    assert canonical[1] == "merged" and late[1] == "merged" and late[2] == canonical[2]


def test_a_memory_written_after_the_bulk_read_is_searched_per_memory(engine: Engine) -> None:
    """A memory the bulk read did not see is searched as today: its twin is found — from its
    own search, and from the twin's in an earlier chunk."""
    settings = _clustered_user(engine, chunk_size=5000)
    with engine.connect() as conn, conn.begin():
        nb = bulk_neighbours(conn, settings, USER)
        twin_of, vector = conn.execute(text(
            "SELECT id, CAST(embedding AS text) FROM engine.companion_memories"
            " WHERE user_id = :u ORDER BY created_at LIMIT 1"), {"u": USER}).one()
    with engine.begin() as conn:
        late = conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, importance,"
            " embedding, embedding_model) SELECT user_id, 'again', category, 0.5, embedding,"
            " embedding_model FROM engine.companion_memories WHERE id = :i RETURNING id"),
            {"i": twin_of}).scalar_one()
    assert late not in nb.index
    # a chunk of the oldest memories (the twin's, not the late one's): the twin's search
    # meets the late row, as today's search would (it was written by someone else since)
    first = read_chunk(engine, load_settings(consolidation_exact_below=300,
                                             consolidation_chunk_size=100,
                                             consolidation_max_clusters=500), nb)
    assert twin_of in first.chunk and late not in first.chunk
    assert tuple(sorted((late, twin_of), key=str)) in first.pairs
    read = read_chunk(engine, settings, nb)
    assert late in read.chunk
    assert tuple(sorted((late, twin_of), key=str)) in read.pairs
    assert vector


def test_a_bulk_chunk_is_read_in_a_handful_of_statements(engine: Engine) -> None:
    """Issue 34: a chunk read from the bulk result was ~14 statements (the choice of search,
    the cells' version, the recent backlog, the claim, each page and each page's far ends
    apart), each a round trip on a busy machine; now what it needs before the rows, the
    backlog's next chunk included, is one statement and the rows one (two pages here: the
    page loop runs in memory; which backlog rows are current is which rows came back)."""
    settings = _clustered_user(engine, chunk_size=400)
    with engine.connect() as conn, conn.begin():
        nb = bulk_neighbours(conn, settings, USER)
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        read = read_chunk(engine, settings, nb)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert len(read.chunk) == 400 and read.pairs and read.search == "cells"
    assert len(statements) == 2, statements


def test_a_backlog_row_no_longer_current_is_stepped_over_as_the_page_loop_does(
        engine: Engine) -> None:
    """The chunk's currency comes from its rows read (one probe a row): a listed backlog row
    no longer current (rare: a pass takes its members out of the backlog) is stepped over and
    the chunk filled from further on, exactly as today's page loop fills it."""
    settings = _clustered_user(engine, chunk_size=400)
    with engine.connect() as conn, conn.begin():
        nb = bulk_neighbours(conn, settings, USER)
    with engine.begin() as conn:
        listed = [i for i, _ in uncompared_page(conn, USER, 400, None)]
        gone = [listed[3], listed[250]]
        conn.execute(text("UPDATE engine.companion_memories SET status = 'superseded'"
                          " WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": gone})
    with engine.connect() as conn:
        paged = [i for i, _ in uncompared_page(conn, USER, 400, None)]
    read = read_chunk(engine, settings, nb)
    assert read.chunk == paged and len(paged) == 400 and not set(gone) & set(read.chunk)
    assert not {m.id for m in read.memories} & set(gone)
    assert not {i for p in read.pairs for i in p} & set(gone)
    assert [(m.created_at, m.id) for m in read.memories] == sorted(
        (m.created_at, m.id) for m in read.memories)


def test_an_unclustered_large_backlog_is_cut_into_cells_first_without_the_hnsw_index(
        templates: TemplateDatabases, llm: FakeLLMServer, voyage: FakeVoyageServer) -> None:
    """Issue 34: the HNSW index exists only where a plan reads it (not with the defaults), so
    consolidation no longer searches an unclustered large user through it. A first pass of a
    user beat would cut into cells (RECALL_CELL_MIN_ROWS) but has not yet is cut now and runs
    in bulk: the same decisions as when beat had clustered the user before the pass."""
    llm.set_responder(_merge_every_cluster)
    first_url = templates.clone()
    load(_conninfo(first_url), [USER], 1200, seed=1000)
    copy_name = f"eros_b_{uuid.uuid4().hex[:10]}"
    with templates.admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{copy_name}" TEMPLATE'
                          f' "{make_url(first_url).database}"'))
    clustered_url = with_database(templates.server_url, copy_name)
    templates.created.append(copy_name)
    engine = create_engine(clustered_url, pool_size=1)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT to_regclass("
                                     "'engine.ix_companion_memories_embedding_hnsw')")
                                ).scalar() is None
        recall_cells.cluster_user(engine, load_settings(), USER)  # beat came first
    finally:
        engine.dispose()

    def run(c: Consolidator) -> list[ConsolidationReport]:
        s = c.settings.model_copy(update={"recall_cell_min_rows": 1000})
        return first_pass(Consolidator(s, c.engine, c.llm, c.embedder, c.prompt), USER,
                          new_id=_ids())

    try:
        late, late_reports = _run(first_url, llm, voyage, run)
        beat, beat_reports = _run(clustered_url, llm, voyage, run)
        engine = create_engine(first_url, pool_size=1)
        try:
            with engine.connect() as conn:
                assert cells_sql.has_cells(conn, USER)
        finally:
            engine.dispose()
    finally:
        templates.drop(clustered_url)
        templates.drop(first_url)
    assert "bulk_read" in late_reports[0].timings and "bulk_read" in beat_reports[0].timings
    assert {r.search for r in late_reports} == {"cells"}
    assert sum(r.merged for r in late_reports) >= 120
    assert late == beat


def test_an_unclustered_user_below_the_cells_size_is_searched_by_sketches(
        engine: Engine) -> None:
    """Without cells and below RECALL_CELL_MIN_ROWS, above CONSOLIDATION_EXACT_BELOW: the
    sketches, never HNSW (CONSOLIDATION_HNSW_ABOVE is 0 by default), and no clustering."""
    load(_conninfo(str(engine.url.render_as_string(hide_password=False))), [USER], 600, seed=3)
    s = load_settings(consolidation_exact_below=300)
    assert s.consolidation_hnsw_above == 0
    with engine.connect() as conn, conn.begin():
        assert choose_search(conn, USER, s) == "quantised"
        assert not bulk_due(conn, s.model_copy(update={"consolidation_chunk_size": 100}), USER)
