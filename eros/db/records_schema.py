"""The records eros keeps beside the memories: the erasure log, the ledger's access log, refused
task messages, labels a user withheld, the relabelling's progress and the replica heartbeat.
Ids, counts and codes only, never a person's text. On :mod:`eros.db.meta`'s ``metadata``, which
:mod:`eros.db.schema` imports, so ``alembic check`` sees them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Identity,
    Index,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

from eros.core.erasure import SCOPES, STATUSES
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.db.meta import metadata
from eros.db.meta import now_column as _now

#: one row per erasure request (0018): ids, counts and codes only, never text. ``done`` rows
#: are written in the erasure's own transaction; ``failed`` ones after it rolled back.
erasure_log = Table(
    "erasure_log", metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    #: user | persona | memory | sensitive | message | session (core/erasure.py)
    Column("scope", Text, nullable=False),
    Column("user_id", UUID(as_uuid=True), nullable=True),
    Column("instance_id", UUID(as_uuid=True), nullable=True),
    Column("memory_id", UUID(as_uuid=True), nullable=True),
    _now("requested_at"),
    Column("completed_at", DateTime(timezone=True), nullable=True),
    Column("status", Text, nullable=False),
    #: rows removed (or marked) per table.
    Column("counts", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("task_id", Text, nullable=True),
    #: a SQLSTATE or an exception class name, never a message.
    Column("error_code", Text, nullable=True),
    #: the conversation a ``session`` erasure forgot (0022); NULL for the other scopes.
    Column("session_id", UUID(as_uuid=True), nullable=True),
    CheckConstraint(f"scope IN {SCOPES!r}", name="ck_erasure_log_scope"),
    CheckConstraint(f"status IN {STATUSES!r}", name="ck_erasure_log_status"),
    Index("ix_erasure_log_user", "user_id", "requested_at"),
    Index("ix_erasure_log_failed", "requested_at", postgresql_where=text("status = 'failed'")),
)

#: the memory ledger's access log (0020, ``eros ledger``): every view of a user's ledger and
#: every action, with its time — ids only, never text (``eros ledger-log``).
ledger_access_log = Table(
    "ledger_access_log", metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    _now("at"),
    #: view_user | recall | export | forget_memory | forget_message | forget_user | restore
    Column("action", Text, nullable=False),
    Column("user_id", UUID(as_uuid=True), nullable=True),
    Column("object_id", UUID(as_uuid=True), nullable=True),
    Index("ix_ledger_access_log_user", "user_id", "at"),
)

#: the task dead letter (0021): one row per message refused for its arguments —
#: the task, the message id and what was wrong, never an argument's value.
rejected_tasks = Table(
    "rejected_tasks", metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("task_name", Text, nullable=False),
    Column("task_id", Text, nullable=True),
    #: argument names and fixed phrases (eros/tasks/args.py), never a value.
    Column("error", Text, nullable=False),
    _now("rejected_at"),
    Index("ix_rejected_tasks_rejected_at", "rejected_at"),
)

# --- consent (0022) ----------------------------------------------------------------
#: a (user, special-category label) the user withdrew consent for: not stored again until lifted
sensitivity_withheld = Table(
    "sensitivity_withheld", metadata,
    Column("user_id", UUID(as_uuid=True), primary_key=True),
    Column("label", Text, primary_key=True),
    _now("withheld_at"),
    #: the ``sensitive`` erasure that recorded it
    Column("erasure_id", BigInteger, nullable=True),
    CheckConstraint(f"label IN {SENSITIVITY_LABELS!r}", name="ck_sensitivity_withheld_label"),
)

#: the cursor of ``eros relabel`` (one row per labeller), committed with each batch
relabel_progress = Table(
    "relabel_progress", metadata,
    Column("labeller", Text, primary_key=True),
    Column("after_id", UUID(as_uuid=True), nullable=True),
    #: a turn scan's cursor (``<labeller>:turns`` rows, 0027): the last ``memory_turns.seq``
    Column("after_seq", BigInteger, nullable=True),
    Column("cutoff", DateTime(timezone=True), nullable=False),
    Column("scanned", BigInteger, nullable=False, server_default=text("0")),
    Column("labelled", BigInteger, nullable=False, server_default=text("0")),
    _now("started_at"),
    _now("updated_at"),
    Column("done_at", DateTime(timezone=True), nullable=True),
)

#: the replica heartbeat (0024): one row the primary's beat updates every
#: RECALL_REPLICA_HEARTBEAT_SECS; its age on a replica is how far behind the replica is.
replica_heartbeat = Table(
    "replica_heartbeat", metadata,
    Column("id", SmallInteger, primary_key=True, autoincrement=False),
    _now("beat_at"),
    CheckConstraint("id = 1", name="ck_replica_heartbeat_one_row"),
)
