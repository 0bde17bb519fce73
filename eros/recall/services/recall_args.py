"""Recall's argument checking: ids that are not UUIDs, a scope without its persona, a query
vector that would make every distance wrong — each refused with a RecallError that says so."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence

from eros.core.names import Scope
from eros.errors import RecallError
from eros.recall.db.recall_sql import ScopeFilter


def as_uuid(value: uuid.UUID | str, what: str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise RecallError(f"{what} {value!r} is not a UUID") from None


def scope_filter(user_id: uuid.UUID | str, instance_id: uuid.UUID | str | None, scope: Scope,
                  include_replaced: bool) -> ScopeFilter:
    uid = as_uuid(user_id, "user id")
    iid = as_uuid(instance_id, "instance id") if instance_id is not None else None
    if scope == "relationship" and iid is None:
        raise RecallError("scope 'relationship' needs an instance id (--instance)")
    return ScopeFilter(uid, scope, iid, include_replaced)


def check_vector(vector: Sequence[float], dim: int) -> list[float]:
    """A query vector of the wrong size or with no direction would make every distance wrong
    or NaN; refuse it rather than rank garbage."""
    values = [float(x) for x in vector]
    if len(values) != dim:
        raise RecallError(f"query vector has {len(values)} dimensions, EMBEDDING_DIM is {dim}")
    norm = math.sqrt(sum(x * x for x in values))
    if not math.isfinite(norm) or norm == 0.0:
        raise RecallError("query vector is zero or not finite; cosine similarity is undefined")
    return values
