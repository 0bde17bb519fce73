"""The memory guard's statements: the meaning classifier's store, the training
lock, the rescreen of stored memories into ``status = 'quarantined'`` and back, and
the settling of ``unscreened`` ones.

A quarantined memory records why in ``metadata.guard_quarantine`` (reason, rule, layer and
when: codes, never text), so ``eros rescreen --restore`` can say what it undoes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, text

from eros.guard.core.guard_meaning import MeaningModel


def load_classifier(conn: Connection, embedding_model: str,
                    bank_hash: str) -> MeaningModel | None:
    row = conn.execute(text(
        "SELECT weights, bias, mean, scale, threshold, balanced_accuracy"
        " FROM engine.guard_classifiers WHERE embedding_model = :m AND bank_hash = :h"),
        {"m": embedding_model, "h": bank_hash}).one_or_none()
    if row is None:
        return None
    return MeaningModel(tuple(row.weights), float(row.bias), tuple(row.mean), tuple(row.scale),
                        float(row.threshold), float(row.balanced_accuracy))


def save_classifier(conn: Connection, embedding_model: str, bank_hash: str,
                    model: MeaningModel, *, embedding_tokens: int = 0,
                    cost_usd: float = 0.0) -> None:
    """First writer wins (the training lock makes a second one rare: a model seeded by hand)."""
    conn.execute(text(
        "INSERT INTO engine.guard_classifiers (embedding_model, bank_hash, weights, bias, mean,"
        " scale, threshold, balanced_accuracy, embedding_tokens, cost_usd)"
        " VALUES (:m, :h, :w, :b, :mu, :s, :t, :a, :tok, :usd)"
        " ON CONFLICT (embedding_model, bank_hash) DO NOTHING"),
        {"m": embedding_model, "h": bank_hash, "w": list(model.weights), "b": model.bias,
         "mu": list(model.mean), "s": list(model.scale), "t": model.threshold,
         "a": model.balanced_accuracy, "tok": embedding_tokens, "usd": cost_usd})


def classifier_info(conn: Connection, embedding_model: str,
                    bank_hash: str) -> dict[str, Any] | None:
    """What ``eros status`` shows of a stored model: no weights."""
    row = conn.execute(text(
        "SELECT threshold, balanced_accuracy, trained_at, embedding_tokens,"
        " cost_usd::float8 AS cost_usd FROM engine.guard_classifiers"
        " WHERE embedding_model = :m AND bank_hash = :h"),
        {"m": embedding_model, "h": bank_hash}).one_or_none()
    return dict(row._mapping) if row is not None else None


# The training lock: two keys, our namespace and the (model, bank) pair, transaction-scoped
# (PgBouncer in transaction mode: a session lock would pass to another client).
_LOCK_KEYS = "hashtext('eros.guard'), hashtext(:m || ':' || :h)"


def try_training_lock(conn: Connection, embedding_model: str, bank_hash: str) -> bool:
    """Take the training lock of (model, bank) for this transaction, or say another process
    holds it. The transaction idles through the embedding calls: it is exempt from the
    idle-in-transaction limit (it holds no snapshot between statements at READ COMMITTED)."""
    row = conn.execute(text(
        f"SELECT pg_try_advisory_xact_lock({_LOCK_KEYS}) AS locked,"
        " set_config('idle_in_transaction_session_timeout', '0', true),"
        " set_config('statement_timeout', '0', true)"),
        {"m": embedding_model, "h": bank_hash}).one()
    return bool(row.locked)


def training_in_progress(conn: Connection, embedding_model: str, bank_hash: str) -> bool:
    """Some process of the fleet holds the training lock of (model, bank) right now."""
    return bool(conn.execute(text(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND objsubid = 2 AND database = (SELECT oid FROM pg_database"
        "  WHERE datname = current_database())"
        " AND classid = hashtext('eros.guard')::oid"
        " AND objid = hashtext(:m || ':' || :h)::oid)"),
        {"m": embedding_model, "h": bank_hash}).scalar_one())


@dataclass(frozen=True)
class StoredMemory:
    id: uuid.UUID
    content: str
    embedding_model: str | None
    embedding: list[float] | None


def screenable_memories(engine: Engine, *, batch: int = 500) -> Iterator[list[StoredMemory]]:
    """Every stored memory that can be recalled or made current again, in id order, a batch at
    a time (keyset pagination): current rows, merged and superseded ones (recall's
    ``include_replaced`` shows them, forget's restore step makes them current) and any status
    added later (an unscreened row) — everything but what is already quarantined."""
    return _memories_where(engine, "status <> 'quarantined'", batch)


def quarantine(conn: Connection, ids_reasons: Sequence[tuple[uuid.UUID, dict[str, str]]]
               ) -> int:
    """Move memories to ``quarantined``, recording why and the status they had (``was``, so
    ``restore`` puts a merged row back as merged); returns how many moved. A merged or
    superseded row keeps its ``replaced_by`` and ``replaced_at``."""
    moved = 0
    for memory_id, why in ids_reasons:
        moved += conn.execute(text(
            "UPDATE engine.companion_memories SET status = 'quarantined',"
            " replaced_at = COALESCE(replaced_at, now()),"
            " metadata = metadata || jsonb_build_object('guard_quarantine',"
            " CAST(:why AS jsonb) || jsonb_build_object('at', now(), 'was', status))"
            " WHERE id = :id AND status <> 'quarantined'"),
            {"id": memory_id, "why": _json(why)}).rowcount
    return moved


def restore(conn: Connection, memory_id: uuid.UUID) -> bool:
    """A quarantined memory back to the status it had (current unless it was merged or
    superseded); False when it is not quarantined."""
    return bool(conn.execute(text(
        "UPDATE engine.companion_memories"
        " SET status = COALESCE(metadata->'guard_quarantine'->>'was', 'current'),"
        " replaced_at = CASE WHEN COALESCE(metadata->'guard_quarantine'->>'was', 'current')"
        " = 'current' THEN NULL ELSE replaced_at END,"
        " metadata = metadata - 'guard_quarantine'"
        " WHERE id = :id AND status = 'quarantined'"), {"id": memory_id}).rowcount)


def unscreened_memories(engine: Engine, *, batch: int = 500) -> Iterator[list[StoredMemory]]:
    """Every ``unscreened`` memory (written while the meaning layer had no model), in id
    order, a batch at a time."""
    return _memories_where(engine, "status = 'unscreened'", batch)


def settle_unscreened(conn: Connection, keep: Sequence[uuid.UUID],
                      drop: Sequence[tuple[uuid.UUID, dict[str, str]]]) -> tuple[int, int]:
    """The meaning layer's decision on unscreened memories: kept ones become ``current``,
    dropped ones ``quarantined`` with the reason (codes). A row no longer unscreened (forgotten
    meanwhile, settled by a concurrent run) is left alone. Returns (made current, quarantined)."""
    kept = conn.execute(text(
        "UPDATE engine.companion_memories SET status = 'current'"
        " WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'unscreened'"),
        {"ids": list(keep)}).rowcount if keep else 0
    moved = 0
    for memory_id, why in drop:
        moved += conn.execute(text(
            "UPDATE engine.companion_memories SET status = 'quarantined', replaced_at = now(),"
            " metadata = metadata || jsonb_build_object('guard_quarantine',"
            " CAST(:why AS jsonb) || jsonb_build_object('at', now()))"
            " WHERE id = :id AND status = 'unscreened'"),
            {"id": memory_id, "why": _json(why)}).rowcount
    return int(kept), moved


def count_unscreened(conn: Connection) -> int:
    return int(conn.execute(text(
        "SELECT count(*) FROM engine.companion_memories WHERE status = 'unscreened'"))
        .scalar_one())


def _json(value: dict[str, str]) -> str:
    import json

    return json.dumps(value)


def _memories_where(engine: Engine, status_filter: str, batch: int
                    ) -> Iterator[list[StoredMemory]]:
    """The memories whose status matches ``status_filter`` (a constant SQL predicate, never
    input), in id order, a batch at a time (keyset pagination, a short read per batch)."""
    after = uuid.UUID(int=0)
    while True:
        with engine.connect() as conn:
            rows = conn.execute(text(
                "SELECT id, content, embedding_model, embedding::real[] AS embedding"
                f" FROM engine.companion_memories WHERE {status_filter} AND id > :after"
                " ORDER BY id LIMIT :n"), {"after": after, "n": batch}).all()
        if not rows:
            return
        yield [StoredMemory(r.id, r.content, r.embedding_model,
                            list(r.embedding) if r.embedding is not None else None)
               for r in rows]
        after = rows[-1].id
