"""Issue 16, hole 9: the consolidation lock keys on one 64-bit hash, so two users whose 32-bit
hashes collide (likely among ~10^5 users) no longer park each other as busy."""

from __future__ import annotations

import uuid

from sqlalchemy import Engine, text

from eros.consolidation.db import consolidation_write_sql


def _colliding_users(engine: Engine) -> tuple[uuid.UUID, uuid.UUID]:
    """Two user ids with the same 32-bit ``hashtext`` (a birthday search, server-side)."""
    with engine.connect() as conn:
        ids = conn.execute(text(
            "SELECT (array_agg(id))[1:2] FROM (SELECT gen_random_uuid() AS id"
            " FROM generate_series(1, 300000)) u"
            " GROUP BY hashtext(id::text) HAVING count(*) > 1 LIMIT 1")).scalar()
    assert ids, "no 32-bit collision among 300,000 ids (about 10 expected)"
    return ids[0], ids[1]


def test_users_whose_32_bit_hashes_collide_do_not_block_each_other(engine: Engine) -> None:
    first, second = _colliding_users(engine)
    with engine.connect() as a, engine.connect() as b:
        a.begin()
        b.begin()
        assert consolidation_write_sql.try_lock(a, first)
        assert consolidation_write_sql.try_lock(b, second), "a different user was reported busy"
        assert not consolidation_write_sql.try_lock(b, first)  # the same user: really busy
        a.rollback()
        b.rollback()
