"""Issue 17: what one classified session costs the database, and the pool's idle ping.

Counted with SQLAlchemy's own events on a real engine against real PostgreSQL and the fake
providers: the classify path is one statement for the attempt and its turns on an AUTOCOMMIT
connection (issue 34: no BEGIN or COMMIT round trip), then one transaction of three
statements for the write (the third indexes the user's turns, issue 31), with no ping on a
connection just used. A connection that idled and died is replaced before anything runs on it.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import Engine, event, text
from sqlalchemy.exc import DBAPIError

from eros.db import engine as engine_module
from eros.db.engine import make_engine
from eros.dreaming.services.classify import Pipeline, classify, start_attempt
from eros.guard.services.guard_model import meaning_layer
from eros.memory.db import repo
from eros.memory.db.write_sql import Float4Array
from eros.prompts import load_prompt
from eros.providers.embeddings import VoyageEmbedder
from eros.providers.llm import OpenRouterChat
from eros.settings import Settings
from eros.tasks.base import is_database_transient
from testkit.data import add_session, mem_line


@pytest.fixture
def lean(db_url: str, provider_settings: Callable[..., Settings]) -> Pipeline:
    settings = provider_settings(llm_timeout_secs=2, embedding_timeout_secs=2)
    return Pipeline(settings, make_engine(db_url), OpenRouterChat(settings),
                    VoyageEmbedder(settings), load_prompt())


class Sent:
    """Statements, transaction ends and checkouts an engine makes (SQLAlchemy events)."""

    def __init__(self, engine: Engine) -> None:
        self.statements: list[str] = []
        self.ends = self.commits = self.checkouts = 0
        event.listen(engine, "before_cursor_execute",
                     lambda *a: self.statements.append(a[2].split()[0].upper()))
        event.listen(engine, "commit", self._commit)
        event.listen(engine, "rollback", self._end)
        event.listen(engine.pool, "checkout", self._checkout)

    def _end(self, *_: object) -> None:
        self.ends += 1

    def _commit(self, *_: object) -> None:
        self.commits += 1
        self._end()

    def _checkout(self, *_: object) -> None:
        self.checkouts += 1


def _classify_counted(pipeline: Pipeline) -> tuple[uuid.UUID, Sent]:
    with pipeline.engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai"),
                                 mem_line("hobby", 0.4, "Likes jazz")])
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    meaning_layer(pipeline.settings, pipeline.engine, pipeline.embedder)  # a worker's warm lookup
    sent = Sent(pipeline.engine)
    attempt = start_attempt(pipeline, sid, claim.token)
    assert attempt is not None
    report = classify(pipeline, attempt)
    assert (report.outcome, report.memories_written) == ("memories", 2)
    return sid, sent


def test_a_classified_session_is_two_statements_and_no_transaction(lean: Pipeline) -> None:
    sid, sent = _classify_counted(lean)
    # attempt + turns, then stamp + memories + run row + the turns' index rows
    # (dreaming/db/finish_sql.py), each a transaction by itself (AUTOCOMMIT: no BEGIN, no
    # COMMIT sent); it was the attempt, then a transaction of three statements
    assert sent.statements == ["WITH", "WITH"]
    assert (sent.commits, sent.checkouts) == (0, 2)
    with lean.engine.connect() as conn:
        row = conn.execute(text(
            "SELECT s.memory_count, s.classified_at IS NOT NULL AS stamped,"
            " (SELECT count(*) FROM engine.classification_runs r WHERE r.session_id = s.id"
            "    AND r.memory_count = 2 AND r.outcome = 'memories') AS runs"
            " FROM engine.chat_sessions s WHERE s.id = :i"), {"i": sid}).one()
    assert (row.memory_count, row.stamped, row.runs) == (2, True, 1)
    lean.engine.dispose()


def test_behind_pgbouncer_the_attempt_keeps_its_transaction(
        db_url: str, provider_settings: Callable[..., Settings]) -> None:
    """DATABASE_POOL_MODE=transaction sets the timeouts per transaction (SET LOCAL as it
    begins): the attempt's statement and the finishing one each run inside one so that they
    bind it."""
    settings = provider_settings(
        llm_timeout_secs=2, embedding_timeout_secs=2, database_pool_mode="transaction")
    pipeline = Pipeline(settings, make_engine(db_url, settings=settings),
                        OpenRouterChat(settings), VoyageEmbedder(settings), load_prompt())
    _, sent = _classify_counted(pipeline)
    assert sent.statements == ["WITH", "WITH"]
    assert (sent.commits, sent.checkouts) == (2, 2)
    pipeline.engine.dispose()


def test_a_rerun_records_the_rows_it_wrote_not_the_candidates(lean: Pipeline) -> None:
    with lean.engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai")])
    for expected in (1, 0):
        with lean.engine.begin() as conn:
            claim = repo.claim_one(conn, sid, stale_secs=600, force=True)
        assert claim is not None
        attempt = start_attempt(lean, sid, claim.token)
        assert attempt is not None
        assert classify(lean, attempt).memories_written == expected
        with lean.engine.connect() as conn:
            assert conn.execute(text("SELECT memory_count FROM engine.chat_sessions"
                                     " WHERE id = :i"), {"i": sid}).scalar_one() == expected
    lean.engine.dispose()


def test_vectors_arrive_as_the_float4_values_sent(engine: Engine) -> None:
    values = [0.1, -2.5e-8, 1 / 3, 123456.789, 0.0, -1.0]
    with engine.connect() as conn:
        got = conn.execute(text("SELECT CAST(CAST(:v AS real[]) AS vector)::text"),
                           {"v": Float4Array(values)}).scalar_one()
    as_float4 = [struct.unpack("f", struct.pack("f", v))[0] for v in values]
    assert [float(x) for x in got.strip("[]").split(",")] == pytest.approx(as_float4,
                                                                           rel=1e-7)


def test_an_idle_dead_connection_is_replaced_before_use(db_url: str, engine: Engine,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pooled = make_engine(db_url, pool_size=1)
    with pooled.connect() as conn:
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with engine.connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:p, 5000)"), {"p": pid})
        admin.commit()
    # the connection has now idled "longer" than the window: it is pinged, found dead and
    # replaced, and the statement runs on a new backend
    monkeypatch.setattr(engine_module, "PING_IDLE_SECS", 0.0)
    with pooled.connect() as conn:
        assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() != pid
    pooled.dispose()


def test_a_connection_just_used_is_not_pinged_and_a_dead_one_fails_once(
        db_url: str, engine: Engine) -> None:
    """Inside the idle window nothing is sent before the statement (pool_pre_ping sent a
    ping on every checkout); a server restart landing there is one disconnect error, after
    which SQLAlchemy has invalidated the pool and the next checkout connects afresh."""
    pooled = make_engine(db_url, pool_size=1)
    assert not pooled.pool._pre_ping
    sent = Sent(pooled)
    with pooled.connect() as conn:
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with engine.connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:p, 5000)"), {"p": pid})
        admin.commit()
    with pytest.raises(DBAPIError) as info, pooled.connect() as conn:
        conn.execute(text("SELECT 1"))
    assert info.value.connection_invalidated and is_database_transient(info.value)
    with pooled.connect() as conn:
        assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() != pid
    assert sent.statements == ["SELECT"] * 3
    pooled.dispose()
