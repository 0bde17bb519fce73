"""The memory guard's statements (issue 25): the meaning classifier's cache, and the rescreen
of stored memories into ``status = 'quarantined'`` and back.

A quarantined memory records why in ``metadata.guard_quarantine`` (reason, rule, layer and
when: codes, never text), so ``eros rescreen --restore`` can say what it undoes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text

from eros.core.guard_meaning import MeaningModel


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
                    model: MeaningModel) -> None:
    """First writer wins: two workers training at once store one model."""
    conn.execute(text(
        "INSERT INTO engine.guard_classifiers (embedding_model, bank_hash, weights, bias, mean,"
        " scale, threshold, balanced_accuracy) VALUES (:m, :h, :w, :b, :mu, :s, :t, :a)"
        " ON CONFLICT (embedding_model, bank_hash) DO NOTHING"),
        {"m": embedding_model, "h": bank_hash, "w": list(model.weights), "b": model.bias,
         "mu": list(model.mean), "s": list(model.scale), "t": model.threshold,
         "a": model.balanced_accuracy})


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
    added later (an unscreened row) — everything but what is already quarantined (issue 30)."""
    after = uuid.UUID(int=0)
    while True:
        with engine.connect() as conn:
            rows = conn.execute(text(
                "SELECT id, content, embedding_model, embedding::real[] AS embedding"
                " FROM engine.companion_memories WHERE status <> 'quarantined' AND id > :after"
                " ORDER BY id LIMIT :n"), {"after": after, "n": batch}).all()
        if not rows:
            return
        yield [StoredMemory(r.id, r.content, r.embedding_model,
                            list(r.embedding) if r.embedding is not None else None)
               for r in rows]
        after = rows[-1].id


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


def _json(value: dict[str, str]) -> str:
    import json

    return json.dumps(value)
