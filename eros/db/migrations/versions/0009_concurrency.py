"""Concurrency fixes: a turn's seq is taken under its session's row lock.

``chat_sessions.last_seq`` is the seq of the session's newest committed turn. A BEFORE INSERT
row trigger on ``chat_messages`` locks the session row (``UPDATE … SET last_seq = nextval``)
and gives the turn that value as its ``seq``. Every writer of one session therefore holds the
row lock from the moment its seq is drawn until it commits, so per session the seq order is
the commit order: a reader that sees seq ``n`` sees every turn below ``n``, and a watermark
can never pass a turn still in flight (when seq was drawn at insert rather than under the lock,
a turn committing late fell below the watermark and was never classified). ``FINISH`` compares
the row's ``last_seq`` with the watermark: PostgreSQL re-reads the row after waiting for a
turn's lock, which an ``EXISTS`` over ``chat_messages`` in the old snapshot did not (a turn
arriving while the session was stamped was missed).

seq stays one global identity (unique), so every existing watermark keeps its meaning.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

S = "engine"

_FUNCTION = f"""
CREATE FUNCTION {S}.chat_messages_assign_seq() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    assigned bigint;
BEGIN
    -- the row lock first, the number second: whoever holds the lock draws the next seq
    UPDATE {S}.chat_sessions
       SET last_seq = nextval(pg_get_serial_sequence('{S}.chat_messages', 'seq'))
     WHERE id = NEW.session_id
    RETURNING last_seq INTO assigned;
    IF FOUND THEN
        NEW.seq := assigned;
    END IF;  -- no session: keep the default seq and let the foreign key report it
    RETURN NEW;
END $$;
"""


def upgrade() -> None:
    op.add_column("chat_sessions", sa.Column("last_seq", sa.BigInteger, nullable=False,
                                             server_default=sa.text("0")), schema=S)
    # no turn may be written between the backfill and the trigger
    op.execute(f"LOCK TABLE {S}.chat_messages IN SHARE ROW EXCLUSIVE MODE")
    op.execute(f"""
        UPDATE {S}.chat_sessions AS s SET last_seq = m.top
          FROM (SELECT session_id, max(seq) AS top FROM {S}.chat_messages
                 GROUP BY session_id) AS m
         WHERE s.id = m.session_id
    """)
    op.execute(_FUNCTION)
    op.execute(f"""
        CREATE TRIGGER chat_messages_assign_seq
        BEFORE INSERT ON {S}.chat_messages
        FOR EACH ROW EXECUTE FUNCTION {S}.chat_messages_assign_seq()
    """)


def downgrade() -> None:
    op.execute(f"DROP TRIGGER chat_messages_assign_seq ON {S}.chat_messages")
    op.execute(f"DROP FUNCTION {S}.chat_messages_assign_seq()")
    op.drop_column("chat_sessions", "last_seq", schema=S)
