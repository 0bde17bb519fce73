"""Consolidation (real dreaming), the pure part: which of a user's memories are the same fact.

Plain data in, plain data out — no database, no HTTP — so every rule below is unit-tested.

- **Scope.** Memories are only ever compared within one *layer* (the profile layer, or one
  persona's relationship layer) and one category: "lives in Shanghai" under ``fact`` is never
  merged with anything under ``event``, and a relationship memory never folds into the profile.
- **Exact duplicates** — the same :func:`~eros.core.text.normalise_for_dedup` text in one
  layer and category — need no model: the newest copy stays current, the others merge into it.
- **Near duplicates** — cosine similarity ≥ θ, found by the database (pgvector ``<=>``) and
  handed in as pairs — are grouped by union-find (connected components, so A~B and B~C put A,
  B and C in one cluster). Exact copies are folded into their newest copy first, so the model
  sees each distinct text once. Clusters go to the model, which decides what merges.
- **Near-duplicate share** = memories that have at least one near twin (similar pair or exact
  copy) in their layer and category ÷ all current memories. Counting memories rather than
  pairs keeps it in [0, 1] and readable: five copies of one fact among 100 memories is 0.05,
  where a pair count would say 10. It is the trigger of a pass and its before/after metric.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from eros.core.text import normalise_for_dedup

Layer = tuple[uuid.UUID | None, str]  # (instance_id, category)
Pair = tuple[uuid.UUID, uuid.UUID]


@dataclass(frozen=True)
class Memory:
    """One current memory as a pass reads it."""

    id: uuid.UUID
    content: str
    category: str
    created_at: datetime
    importance: float | None = None
    instance_id: uuid.UUID | None = None
    #: a previous pass already considered it (``consolidation_seen_at`` is set).
    seen: bool = False

    @property
    def layer(self) -> Layer:
        return (self.instance_id, self.category)


def newest_first_key(memory: Memory) -> tuple[datetime, str]:
    """Order by date, the id breaking ties (rows of one transaction share ``created_at``)."""
    return (memory.created_at, str(memory.id))


@dataclass(frozen=True)
class ExactGroup:
    """Copies of one text: ``keep`` (the newest) stays current, ``merged`` fold into it."""

    keep: Memory
    merged: tuple[Memory, ...]


@dataclass(frozen=True)
class Cluster:
    """Distinct memories of one layer and category that are pairwise linked by similarity."""

    instance_id: uuid.UUID | None
    category: str
    #: oldest first, so a prompt reads as a timeline.
    members: tuple[Memory, ...]
    #: something in it (a member or a copy folded into one) is new to consolidation.
    new: bool
    #: members left out because the cluster was larger than the size cap (the oldest ones).
    overflow: tuple[Memory, ...] = ()


@dataclass(frozen=True)
class Share:
    """The near-duplicate share: ``near`` of ``total`` memories have a near twin."""

    total: int
    near: int

    @property
    def value(self) -> float:
        return self.near / self.total if self.total else 0.0


@dataclass(frozen=True)
class Clustering:
    exact: tuple[ExactGroup, ...]
    clusters: tuple[Cluster, ...]
    share: Share


class _UnionFind:
    def __init__(self, items: Iterable[uuid.UUID]) -> None:
        self._parent = {item: item for item in items}

    def find(self, item: uuid.UUID) -> uuid.UUID:
        root = item
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[item] != root:  # path compression
            self._parent[item], item = root, self._parent[item]
        return root

    def union(self, a: uuid.UUID, b: uuid.UUID) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # deterministic root: the smaller id, so the result never depends on pair order
            low, high = sorted((ra, rb), key=str)
            self._parent[high] = low


def exact_groups(memories: Iterable[Memory]) -> list[ExactGroup]:
    """Groups of two or more copies of one normalised text within a layer and category."""
    by_text: dict[tuple[Layer, str], list[Memory]] = defaultdict(list)
    for memory in memories:
        by_text[(memory.layer, normalise_for_dedup(memory.content))].append(memory)
    groups = []
    for copies in by_text.values():
        if len(copies) < 2:
            continue
        ordered = sorted(copies, key=newest_first_key)
        groups.append(ExactGroup(ordered[-1], tuple(ordered[:-1])))
    groups.sort(key=lambda g: newest_first_key(g.keep))
    return groups


def _valid_pairs(pairs: Iterable[Pair], by_id: dict[uuid.UUID, Memory]) -> Iterable[Pair]:
    """Pairs of two distinct known memories in one layer; anything else is ignored."""
    for a, b in pairs:
        ma, mb = by_id.get(a), by_id.get(b)
        if ma is not None and mb is not None and a != b and ma.layer == mb.layer:
            yield a, b


def near_dup_share(memories: Sequence[Memory], pairs: Iterable[Pair],
                   groups: Sequence[ExactGroup] | None = None) -> Share:
    """How many memories have a near twin (similar pair or exact copy), of how many;
    ``groups``: the memories' :func:`exact_groups`, when the caller has them already."""
    by_id = {m.id: m for m in memories}
    near: set[uuid.UUID] = set()
    for a, b in _valid_pairs(pairs, by_id):
        near.update((a, b))
    for group in exact_groups(memories) if groups is None else groups:
        near.add(group.keep.id)
        near.update(m.id for m in group.merged)
    return Share(len(by_id), len(near))


def components(pairs: Iterable[Pair]) -> int:
    """How many groups the pairs link (an upper bound on the clusters they make): how a pass
    knows it has found a model call's worth of work and can stop reading."""
    pairs = list(pairs)
    forest = _UnionFind(i for p in pairs for i in p)
    for a, b in pairs:
        forest.union(a, b)
    return len({forest.find(i) for p in pairs for i in p})


def cluster(memories: Sequence[Memory], pairs: Iterable[Pair], *,
            max_size: int = 12) -> Clustering:
    """Exact-duplicate groups, near-duplicate clusters (two or more distinct texts) and the
    share. A cluster larger than ``max_size`` keeps its newest members; the oldest wait in
    ``overflow`` for a later pass, where they meet the canonical memory written now."""
    pairs = list(pairs)
    by_id = {m.id: m for m in memories}
    groups = exact_groups(memories)
    representative = {m.id: m.id for m in memories}
    new_via_copy: set[uuid.UUID] = set()
    for group in groups:
        for copy in group.merged:
            representative[copy.id] = group.keep.id
            if not copy.seen:
                new_via_copy.add(group.keep.id)
    reps = [m for m in memories if representative[m.id] == m.id]
    forest = _UnionFind(m.id for m in reps)
    for a, b in _valid_pairs(pairs, by_id):
        forest.union(representative[a], representative[b])
    components: dict[uuid.UUID, list[Memory]] = defaultdict(list)
    for memory in reps:
        components[forest.find(memory.id)].append(memory)
    clusters = []
    for members in components.values():
        if len(members) < 2:
            continue
        ordered = sorted(members, key=newest_first_key)
        kept, overflow = ordered[-max_size:], ordered[:-max_size] if len(ordered) > max_size \
            else []
        new = any(not m.seen or m.id in new_via_copy for m in kept)
        first = kept[0]
        clusters.append(Cluster(first.instance_id, first.category, tuple(kept), new,
                                tuple(overflow)))
    clusters.sort(key=lambda c: (c.category, newest_first_key(c.members[-1])))
    return Clustering(tuple(groups), tuple(clusters), near_dup_share(memories, pairs, groups))


@dataclass(frozen=True)
class PromptCluster:
    """A cluster as the model sees it: a number, and a small number for every member."""

    number: int
    cluster: Cluster
    numbers: tuple[int, ...]

    def by_number(self) -> dict[int, Memory]:
        return dict(zip(self.numbers, self.cluster.members, strict=True))


@dataclass(frozen=True)
class Selection:
    """Which clusters one call asks about, and which wait for a later pass."""

    sent: tuple[PromptCluster, ...]
    #: clusters with something new that did not fit in this call.
    deferred: tuple[Cluster, ...]
    #: clusters the model has already judged (nothing new in them): not asked again.
    settled: tuple[Cluster, ...]


def select_clusters(clusters: Sequence[Cluster], *, max_clusters: int) -> Selection:
    """Number the clusters that contain something new, at most ``max_clusters`` of them, so
    the whole user fits one call; memories are numbered 1…N across the call, so a number that
    belongs to another cluster is detectably wrong."""
    fresh = [c for c in clusters if c.new]
    settled = tuple(c for c in clusters if not c.new)
    sent: list[PromptCluster] = []
    next_number = 1
    for index, item in enumerate(fresh[:max_clusters], start=1):
        numbers = tuple(range(next_number, next_number + len(item.members)))
        next_number += len(item.members)
        sent.append(PromptCluster(index, item, numbers))
    return Selection(tuple(sent), tuple(fresh[max_clusters:]), settled)
