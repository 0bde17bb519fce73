"""``engine.memory_turns`` (0025): the user's turns as a recall layer.

One row per user turn eros has read and embedded. The turn's text is not copied: a reader joins
``chat_messages`` on ``seq`` (the product's table stays the product's), and deleting the message
cascades its vector away. It shares :mod:`eros.db.meta`'s ``metadata`` with
:mod:`eros.db.schema`, which imports this module, so ``alembic check`` sees the table.
"""

from __future__ import annotations

from pgvector.sqlalchemy import HALFVEC
from sqlalchemy import (
    DDL,
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    Table,
    Text,
    event,
    text,
)
from sqlalchemy.dialects.postgresql import BIT, UUID

from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.core.statuses import TURN_STATUSES
from eros.db.meta import EMBEDDING_DIM, SCHEMA, metadata

memory_turns = Table(
    "memory_turns", metadata,
    #: the product's message (``chat_messages.seq``); its deletion removes the vector.
    Column("seq", BigInteger, ForeignKey(f"{SCHEMA}.chat_messages.seq", ondelete="CASCADE"),
           primary_key=True, autoincrement=False),
    Column("session_id", UUID(as_uuid=True), nullable=False),
    Column("user_id", UUID(as_uuid=True), nullable=False),
    Column("instance_id", UUID(as_uuid=True), nullable=True),
    #: the message's ``sent_at``: the session's date, what a rendered turn is dated by.
    Column("said_at", DateTime(timezone=True), nullable=False),
    #: half precision (2 bytes a dimension): half the size of a memory's vector.
    Column("embedding", HALFVEC(EMBEDDING_DIM), nullable=False),
    Column("embedding_model", Text, nullable=False),
    #: one bit per dimension: what a recall's Hamming pre-scan reads (index-only). Set by the
    #: ``memory_turns_place`` trigger (0029): the sign of ``embedding − centre``, the centre
    #: of the turn's model in ``turn_sketch_centres`` (none: of ``embedding`` itself).
    Column("embedding_bq", BIT(EMBEDDING_DIM), nullable=True),
    #: the turn's nearest cell among its user's memory cells (``memory_cells``, 0029): set by
    #: the trigger and by a clustering of the user; -1 (in no cell: no cells yet) always read.
    Column("cell", Integer, nullable=False, server_default=text("-1")),
    #: special category, the labels of ``companion_memories.sensitivity``; NULL = none.
    Column("sensitivity", Text, nullable=True),
    Column("status", Text, nullable=False, server_default=text("'current'")),
    Column("indexed_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    CheckConstraint(f"status IN {TURN_STATUSES!r}", name="ck_memory_turns_status"),
    CheckConstraint(f"sensitivity IS NULL OR sensitivity IN {SENSITIVITY_LABELS!r}",
                    name="ck_memory_turns_sensitivity"),
    # a recall's scope (user, layer, status) as one index range, covering the pre-scan; a
    # clustered user's probed cells as a few ranges of it (0029)
    Index("ix_memory_turns_recall", "user_id", "instance_id", "status", "cell",
          postgresql_include=["seq", "sensitivity", "embedding_bq"]),
    # erasure and backfill by session
    Index("ix_memory_turns_session", "session_id"),
    # what eros.screen_unscreened reads of the turns (0026): empty once the layer has a model
    Index("ix_memory_turns_unscreened", "seq", postgresql_where=text("status = 'unscreened'")),
)

#: the centre a model's turn sketches are taken against (0029): the mean of a sample of its
#: turn vectors, set once by the cells pass when the model's vectors share a direction (a row
#: with no centre when they do not). A model with a row re-ranks the smaller pool.
turn_sketch_centres = Table(
    "turn_sketch_centres", metadata,
    Column("embedding_model", Text, primary_key=True),
    #: NULL: the model's vectors share no direction, its sketches are taken as they are
    Column("centre", HALFVEC(EMBEDDING_DIM), nullable=True),
    #: the turns the mean was taken over
    Column("turns", BigInteger, nullable=False),
    Column("computed_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    #: while set (0030): the model's turns below this seq may still be sketched without the
    #: centre — the re-sketch runs in batches from the top down; NULL: all are centred
    Column("resketch_below", BigInteger, nullable=True),
)

#: ``eros turns backfill``'s cursor (0026): one row per backfill, keyed ``turns``.
turn_backfill = Table(
    "turn_backfill", metadata,
    Column("name", Text, primary_key=True),
    #: the last ``chat_messages.seq`` scanned
    Column("after_seq", BigInteger, nullable=False, server_default=text("0")),
    #: the newest seq when the run began: later turns are classify's to index
    Column("cutoff_seq", BigInteger, nullable=False),
    Column("scanned", BigInteger, nullable=False, server_default=text("0")),
    Column("indexed", BigInteger, nullable=False, server_default=text("0")),
    Column("started_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    Column("done_at", DateTime(timezone=True), nullable=True),
)

# Vectors inline in the heap row, as companion_memories' (0004).
event.listen(memory_turns, "after_create", DDL(  # type: ignore[no-untyped-call]
    f"ALTER TABLE {SCHEMA}.memory_turns ALTER COLUMN embedding SET STORAGE MAIN"))

#: what HISTORY_RETENTION_DAYS reads of the turns (0027): the quarantined ones, by age.
Index("ix_memory_turns_quarantined", memory_turns.c.indexed_at,
      postgresql_where=text("status = 'quarantined'"))
