"""Table definitions (SQLAlchemy Core) for schema ``engine``.

``chat_sessions`` and ``chat_messages`` are written by the chat product with plain SQL, so every
column eros adds has a default. ``companion_memories`` is eros's output. The alembic migrations
create exactly this metadata (``alembic check`` proves it).
"""

from __future__ import annotations

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    Numeric,
    Table,
    Text,
    event,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, BIT, JSONB, UUID

from eros.core.categories import CATEGORIES
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.core.statuses import MEMORY_STATUSES
from eros.db.meta import EMBEDDING_DIM as EMBEDDING_DIM  # re-exported
from eros.db.meta import SCHEMA as SCHEMA
from eros.db.meta import metadata as metadata
from eros.db.meta import now_column as _now
from eros.db.meta import uuid_pk as _uuid_pk

chat_sessions = Table(
    "chat_sessions", metadata,
    _uuid_pk(),
    Column("user_id", UUID(as_uuid=True), nullable=False),
    Column("instance_id", UUID(as_uuid=True), nullable=True),
    _now("last_active_at"),
    _now("created_at"),
    Column("classified_at", DateTime(timezone=True)),
    Column("classification_claimed_at", DateTime(timezone=True)),
    # -- eros's own bookkeeping ------------------------------------------------------------
    Column("claim_token", UUID(as_uuid=True)),
    Column("next_attempt_at", DateTime(timezone=True)),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("classified_through_seq", BigInteger, nullable=False, server_default=text("0")),
    # seq of the newest committed turn, drawn under this row's lock by the chat_messages
    # trigger (0009): per session, seq order is commit order; FINISH compares against it.
    Column("last_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("dead_lettered_at", DateTime(timezone=True)),
    Column("outcome", Text),
    Column("outcome_at", DateTime(timezone=True)),
    Column("memory_count", Integer, nullable=False, server_default=text("0")),
    Column("model", Text),
    Column("prompt_tokens", Integer, nullable=False, server_default=text("0")),
    Column("completion_tokens", Integer, nullable=False, server_default=text("0")),
    Column("embedding_tokens", Integer, nullable=False, server_default=text("0")),
    Column("last_error", Text),
    #: candidates the memory guard dropped in the last extraction (docs/security.md).
    Column("guard_dropped", Integer, nullable=False, server_default=text("0")),
    #: set by the product: an archived session is never claimed (0012).
    Column("archived_at", DateTime(timezone=True)),
    #: the erasure floor (tombstone, 0018): a user or persona forget sets it to the session's
    #: last_seq; no extraction ever reads a turn at or below it again, whatever resets the
    #: watermark (force, requeue --from-start). Turns written later are read as usual.
    Column("erased_through_seq", BigInteger, nullable=False, server_default=text("0")),
    #: the memory tombstone (0018): turns a memory forget took out of every later extraction
    #: (the forgotten memory's source turns); NULL = none.
    Column("erased_seqs", ARRAY(BigInteger), nullable=True),
    # Serves the claim: only sessions with unextracted content are in it, oldest first, so a
    # claim reads O(batch) index entries however many sessions are done or archived.
    Index("ix_chat_sessions_claimable", "last_active_at",
          postgresql_where=text("classified_at IS NULL AND dead_lettered_at IS NULL"
                                " AND archived_at IS NULL")),
    Index("ix_chat_sessions_user", "user_id"),
    Index("ix_chat_sessions_dead", "dead_lettered_at",
          postgresql_where=text("dead_lettered_at IS NOT NULL")),
    # In flight = claimed and not yet finished: the claim's backpressure counts these.
    Index("ix_chat_sessions_claimed", "classification_claimed_at",
          postgresql_where=text("claim_token IS NOT NULL")),
)

chat_messages = Table(
    "chat_messages", metadata,
    _uuid_pk(),
    Column("session_id", UUID(as_uuid=True),
           ForeignKey(f"{SCHEMA}.chat_sessions.id", ondelete="CASCADE"), nullable=False),
    Column("role", Text, nullable=False),
    Column("content", Text, nullable=False, server_default=text("''")),
    _now("sent_at"),
    # Strict tiebreak for rows sharing a sent_at (one transaction shares now()), and the
    # watermark that tells the new part of a resumed session from the part already extracted.
    Column("seq", BigInteger, Identity(always=False), nullable=False, unique=True),
    #: ``text``, ``voice``, ``product_qa``, …; DREAMING_CHANNELS says which are read (0012).
    Column("channel", Text, nullable=False, server_default=text("'text'")),
    Index("ix_chat_messages_session_order", "session_id", "sent_at", "seq"),
    Index("ix_chat_messages_session_seq", "session_id", "seq"),
)

#: the memories' HNSW index and its predicate (0028): partial, on current rows only; not in
#: the metadata: it exists only where settings read it (0031, eros/db/hnsw_index.py).
HNSW_INDEX = "ix_companion_memories_embedding_hnsw"
HNSW_WHERE = "status = 'current'"


def hnsw_index_sql(*, name: str = HNSW_INDEX, column: str = "embedding", options: str = "",
                   concurrently: bool = False) -> str:
    """The CREATE INDEX of the memories' HNSW index (partial: HNSW_WHERE), as 0028 makes it;
    ``options``: a ``WITH (...)`` clause, e.g. ``WITH (m = 16, ef_construction = 64)``."""
    how = "CONCURRENTLY IF NOT EXISTS " if concurrently else ""
    return (f"CREATE INDEX {how}{name} ON {SCHEMA}.companion_memories"
            f" USING hnsw ({column} vector_cosine_ops) {options} WHERE {HNSW_WHERE}"
            ).replace("  ", " ")


companion_memories = Table(
    "companion_memories", metadata,
    _uuid_pk(),
    # SET NULL, not CASCADE: deleting a chat session must not delete what was learned from it.
    Column("session_id", UUID(as_uuid=True),
           ForeignKey(f"{SCHEMA}.chat_sessions.id", ondelete="SET NULL"), nullable=True),
    Column("user_id", UUID(as_uuid=True), nullable=False),
    Column("instance_id", UUID(as_uuid=True), nullable=True),
    Column("content", Text, nullable=False),
    Column("category", Text, nullable=False),
    Column("importance", Float, nullable=True),
    Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("embedding", Vector(EMBEDDING_DIM), nullable=True),
    #: one bit per dimension of ``embedding`` (0006): what recall's Hamming pre-scan reads.
    Column("embedding_bq", BIT(EMBEDDING_DIM), Computed(
        f"(binary_quantize(embedding))::bit({EMBEDDING_DIM})", persisted=True)),
    _now("created_at"),
    #: idempotency key: session and normalised content; a second write is a no-op.
    Column("dedup_key", Text, nullable=True, unique=True),
    Column("model", Text),
    #: the embedding model of ``embedding`` (0012); NULL = written before it was recorded,
    #: taken to be on EMBEDDING_MODEL. Recall never ranks two models' vectors together.
    Column("embedding_model", Text, nullable=True),
    # -- consolidation (real dreaming): nothing is hard-deleted --------------------------------
    #: ``current``, or ``merged`` / ``superseded`` once consolidation replaced it, or
    #: ``quarantined`` when ``eros rescreen`` found the memory guard would drop it (0017; never
    #: recalled, ``eros rescreen --restore ID`` makes it current again), or ``unscreened``
    #: when it was written while the meaning layer had no model yet (0023; never recalled nor
    #: consolidated until ``eros.screen_unscreened`` decides).
    Column("status", Text, nullable=False, server_default=text("'current'")),
    Column("replaced_by", UUID(as_uuid=True),
           ForeignKey(f"{SCHEMA}.companion_memories.id", ondelete="SET NULL"), nullable=True),
    #: when the memory stopped being current.
    Column("replaced_at", DateTime(timezone=True), nullable=True),
    #: when a consolidation pass judged it in a cluster; NULL = never judged (0005).
    Column("consolidation_seen_at", DateTime(timezone=True), nullable=True),
    # -- provenance (0016) --------------------------------------------------------------------
    #: the ``chat_messages.seq`` values the memory came from, sorted and distinct (a canonical
    #: memory: the union of its members'); NULL = written before provenance was recorded.
    Column("source_seqs", ARRAY(BigInteger), nullable=True),
    #: the model's citation was missing or invalid: ``source_seqs`` is the extraction window.
    Column("source_fallback", Boolean, nullable=False, server_default=text("false")),
    #: special category (GDPR art. 9, 0018): one of SENSITIVITY_LABELS; NULL = none.
    Column("sensitivity", Text, nullable=True),
    CheckConstraint(f"status IN {MEMORY_STATUSES!r}", name="ck_companion_memories_status"),
    CheckConstraint(f"category IN {CATEGORIES!r}", name="ck_companion_memories_category"),
    CheckConstraint("importance IS NULL OR (importance >= 0 AND importance <= 1)",
                    name="ck_companion_memories_importance"),
    CheckConstraint(f"sensitivity IS NULL OR sensitivity IN {SENSITIVITY_LABELS!r}",
                    name="ck_companion_memories_sensitivity"),
    Index("ix_companion_memories_session", "session_id"),
    # the ON DELETE SET NULL lookup of a forget, and lineage (0010)
    Index("ix_companion_memories_replaced_by", "replaced_by",
          postgresql_where=text("replaced_by IS NOT NULL")),
    # retention of replaced rows (HISTORY_RETENTION_DAYS, 0018): only replaced rows are in it
    Index("ix_companion_memories_replaced_at", "replaced_at",
          postgresql_where=text("status <> 'current'")),
    Index("ix_companion_memories_current", "user_id", "created_at",
          postgresql_where=text("status = 'current'")),
    # what eros.screen_unscreened reads (0023): empty once the meaning layer has its model
    Index("ix_companion_memories_unscreened", "id",
          postgresql_where=text("status = 'unscreened'")),
    # A user's memories by layer and category (0007): capped counts, selecting an exact
    # scan's rows, and recall's index-only scan of the sketches — one tight range per layer.
    Index("ix_companion_memories_recall_bq", "user_id", "instance_id", "category", "status",
          postgresql_include=["id", "embedding_bq"]),
    Index("ix_companion_memories_user_model", "user_id", "embedding_model"),
    # The HNSW index (HNSW_INDEX, hnsw_index_sql) is not declared here: it exists only where
    # a configured plan reads it, built or dropped by `eros migrate` (eros/db/hnsw_index.py).
    # "which memories derive from seq X": source_seqs @> ARRAY[X] (forget --message)
    Index("ix_companion_memories_source_seqs", "source_seqs", postgresql_using="gin"),
)

# Vectors inline in the heap row, not in TOAST (0004): an exact scan reads one buffer per row.
event.listen(companion_memories, "after_create", DDL(  # type: ignore[no-untyped-call]
    f"ALTER TABLE {SCHEMA}.companion_memories ALTER COLUMN embedding SET STORAGE MAIN"))

#: per-user cells of a heavy user's memories (0008): the centroids recall probes.
memory_cells = Table(
    "memory_cells", metadata,
    Column("user_id", UUID(as_uuid=True), primary_key=True),
    Column("cell", Integer, primary_key=True),
    Column("centroid", Vector(EMBEDDING_DIM), nullable=False),
    #: rows assigned to the cell when the user was clustered (later ones are not counted).
    Column("size", Integer, nullable=False, server_default=text("0")),
    _now("created_at"),
)

#: the current memories no consolidation pass has compared with their neighbours yet (0013):
#: filled by a statement trigger on ``companion_memories`` inserts, emptied by passes. A narrow
#: table, not a column: stamping the 2 KB memory row would re-insert it into HNSW.
consolidation_backlog = Table(
    "consolidation_backlog", metadata,
    Column("memory_id", UUID(as_uuid=True),
           ForeignKey(f"{SCHEMA}.companion_memories.id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", UUID(as_uuid=True), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_consolidation_backlog_user", "user_id", "created_at", "memory_id"),
)

#: what a recall scan needs of every memory, plus its cell (0008): kept exact by triggers on
#: ``companion_memories``; re-clustering rewrites these narrow rows, never the memories.
memory_sketches = Table(
    "memory_sketches", metadata,
    Column("memory_id", UUID(as_uuid=True),
           ForeignKey(f"{SCHEMA}.companion_memories.id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", UUID(as_uuid=True), nullable=False),
    Column("instance_id", UUID(as_uuid=True), nullable=True),
    Column("status", Text, nullable=False),
    #: NULL = not in any cell (user never clustered): always scanned.
    Column("cell", Integer, nullable=True),
    Column("sketch", BIT(EMBEDDING_DIM), nullable=True),
    #: the memory's category (0015): grouped recall completes a category cell by cell.
    Column("category", Text, nullable=False),
    Index("ix_memory_sketches_probe", "user_id", "instance_id", "status", "cell",
          postgresql_include=["memory_id", "sketch"]),
    Index("ix_memory_sketches_category", "user_id", "instance_id", "category", "status", "cell",
          postgresql_include=["memory_id", "sketch"]),
)

#: the memory guard's meaning classifier per (embedding model, exemplar bank) (0017): trained
#: at first use from the bank shipped in the package, then read by every worker.
guard_classifiers = Table(
    "guard_classifiers", metadata,
    Column("embedding_model", Text, primary_key=True),
    Column("bank_hash", Text, primary_key=True),
    Column("weights", ARRAY(Float), nullable=False),
    Column("bias", Float, nullable=False),
    Column("mean", ARRAY(Float), nullable=False),
    Column("scale", ARRAY(Float), nullable=False),
    Column("threshold", Float, nullable=False),
    #: out-of-fold balanced accuracy on the bank; below 0.8 the layer stays off.
    Column("balanced_accuracy", Float, nullable=False),
    _now("trained_at"),
    #: what embedding the bank cost when the model was trained (0023).
    Column("embedding_tokens", Integer, nullable=False, server_default=text("0")),
    Column("cost_usd", Numeric(12, 6), nullable=False, server_default=text("0")),
)

event.listen(memory_cells, "after_create", DDL(  # type: ignore[no-untyped-call]
    f"ALTER TABLE {SCHEMA}.memory_cells ALTER COLUMN centroid SET STORAGE MAIN"))

classification_runs = Table(
    "classification_runs", metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("session_id", UUID(as_uuid=True),
           ForeignKey(f"{SCHEMA}.chat_sessions.id", ondelete="CASCADE"), nullable=False),
    Column("user_id", UUID(as_uuid=True), nullable=False),
    Column("task_id", Text),
    Column("attempt", Integer, nullable=False),
    Column("outcome", Text, nullable=False),
    Column("memory_count", Integer, nullable=False, server_default=text("0")),
    Column("model", Text),
    Column("prompt_tokens", Integer, nullable=False, server_default=text("0")),
    Column("completion_tokens", Integer, nullable=False, server_default=text("0")),
    Column("embedding_tokens", Integer, nullable=False, server_default=text("0")),
    Column("error", Text),
    _now("finished_at"),
    #: cost of this attempt from the configured price table (LLM_PRICE_*, EMBEDDING_PRICE_*).
    Column("cost_usd", Numeric(14, 8), nullable=False, server_default=text("0")),
    Column("guard_dropped", Integer, nullable=False, server_default=text("0")),
    Index("ix_classification_runs_session", "session_id"),
    Index("ix_classification_runs_finished", "finished_at"),
)

memory_history = Table(
    "memory_history", metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("user_id", UUID(as_uuid=True), nullable=False),
    #: ``merge`` (duplicates folded into result) or ``supersede`` (a newer fact replaced them).
    Column("action", Text, nullable=False),
    Column("result_id", UUID(as_uuid=True),
           ForeignKey(f"{SCHEMA}.companion_memories.id", ondelete="SET NULL"), nullable=True),
    Column("source_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    Column("model", Text),
    Column("details", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    _now("created_at"),
    CheckConstraint("action IN ('merge', 'supersede')", name="ck_memory_history_action"),
    Index("ix_memory_history_user", "user_id", "created_at"),
    Index("ix_memory_history_result", "result_id"),
)

consolidation_state = Table(
    "consolidation_state", metadata,
    Column("user_id", UUID(as_uuid=True), primary_key=True),
    #: newest uncompared created_at the finder measured (below the threshold); a pass clears it.
    Column("seen_until", DateTime(timezone=True)),
    #: how many memories were uncompared when the finder measured (0013): a count, not a
    #: date, so a late commit with an older created_at still changes it.
    Column("measured_backlog", Integer),
    Column("last_run_at", DateTime(timezone=True)),
    Column("claimed_at", DateTime(timezone=True)),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("near_dup_share_before", Float),
    Column("near_dup_share_after", Float),
    Column("merged_total", Integer, nullable=False, server_default=text("0")),
    Column("superseded_total", Integer, nullable=False, server_default=text("0")),
    Column("last_outcome", Text),
    Column("last_error", Text),
)

# The records beside the memories (0018 on: erasures, ledger access, refused messages,
# withheld labels, relabel progress, the replica heartbeat) live in their own module, and the
# turns recall layer (0025) in another, on the same metadata.
from eros.db.records_schema import (  # noqa: E402, F401
    erasure_log,
    ledger_access_log,
    rejected_tasks,
    relabel_progress,
    replica_heartbeat,
    sensitivity_withheld,
)
from eros.db.turns_schema import memory_turns, turn_backfill  # noqa: E402, F401
