"""The finishing statement fits psycopg's statement cache (issue 34 item 2): over its limit,
psycopg re-split the 5,834-byte statement on every classified session."""

from __future__ import annotations

import pytest
from psycopg import _queries
from sqlalchemy import text

from eros.dreaming.db import finish_sql


def test_the_finishing_statement_fits_psycopgs_cache() -> None:
    assert finish_sql.CACHED_STATEMENT_BYTES == _queries.MAX_CACHED_STATEMENT_LENGTH
    assert len(finish_sql.FINISH_SQL.encode()) <= finish_sql.CACHED_STATEMENT_BYTES
    assert len(finish_sql._FINISH_NAMES) <= _queries.MAX_CACHED_STATEMENT_PARAMS


def test_every_bind_parameter_has_a_short_name() -> None:
    names = finish_sql._FINISH_NAMES
    assert set(names) == set(finish_sql.FINISH_SESSION._bindparams)
    assert sorted(names.values()) == sorted(f"p{i}" for i in range(len(names)))
    assert all(f"%({short})s" in finish_sql.FINISH_SQL for short in names.values())


def test_a_statement_is_compacted_without_changing_its_meaning() -> None:
    sql, names = finish_sql.compact(text(
        "SELECT CAST(:a AS uuid[]) ,  count( * )\n  FROM t WHERE x = :long_name AND y = 'a'"))
    assert names == {"a": "p0", "long_name": "p1"}
    assert sql == "SELECT %(p0)s::uuid[],count(*)FROM t WHERE x = %(p1)s AND y = 'a'"


def test_a_literal_the_compaction_would_change_is_refused() -> None:
    with pytest.raises(ValueError, match="literal"):
        finish_sql.compact(text("SELECT 'a, (b)' AS v"))


def test_a_statement_with_a_comment_is_refused() -> None:
    # on one line, a comment would swallow everything after it
    with pytest.raises(ValueError, match="comments"):
        finish_sql.compact(text("SELECT 1 -- the one\n, 2"))
