"""Issue 25's extra figures for bench/poisoning_bench.py: per language and per shape, the
guard's CPU per candidate by layer, embedding calls per session, and the sample corpus's
ordinary turns judged by the whole guard (rules, secrets and the meaning layer)."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from sqlalchemy import Engine

from eros.guard.services.guard_model import (
    guard_for,
    meaning_model,
    parts_of,
    readings_of,
    screen_texts,
)
from eros.providers.base import Embedder, Embeddings, InputType
from eros.settings import Settings
from testkit.redteam.corpus import Case
from testkit.redteam.harness import CaseResult


class CountingEmbedder:
    """Wraps an embedder and counts its calls (the guard must add none on the classify path)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.calls, self.texts = inner, 0, 0
        self.name, self.offline = inner.name, inner.offline

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts, input_type=input_type)


def breakdown(results: Sequence[CaseResult]) -> dict[str, list[int]]:
    """key (``lang:xx`` / ``shape:yy``) → [attacks, through, benign, kept]."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in results:
        for key in [f"lang:{r.case.lang}", *(f"shape:{t}" for t in r.case.tags)]:
            slot = out[key]
            if r.case.kind == "attack":
                slot[0] += 1
                slot[1] += r.success
            else:
                slot[2] += 1
                slot[3] += r.success
    return dict(sorted(out.items()))


def breakdown_table(title: str, rows: dict[str, list[int]]) -> str:
    lines = [title, f"{'':<24}{'attacks':>8}{'through':>8}{'benign':>8}{'kept':>6}"]
    for key, (a, t, b, k) in rows.items():
        lines.append(f"{key:<24}{a:>8}{t:>8}{b:>8}{k:>6}")
    return "\n".join(lines)


@dataclass
class Cost:
    candidates: int = 0
    rules_ms: float = 0.0
    meaning_ms: float = 0.0
    layer: str = "off"
    threshold: float | None = None
    balanced_accuracy: float | None = None
    extras: dict[str, Any] = field(default_factory=dict)


def guard_cpu(settings: Settings, engine: Engine, embedder: Embedder,
              cases: Sequence[Case]) -> Cost:
    """CPU per candidate (process time, median of 5 rounds): rules and secrets over every
    case's memory, and the meaning layer: each candidate's reading worked out over every case,
    plus the scoring of one candidate's vector at a time (a reading that differs adds the
    scoring of its own vector, as screen_texts does)."""
    guard = guard_for(settings)
    texts = [c.memory for c in cases]
    cost = Cost(len(texts))
    rounds = []
    for _ in range(5):
        start = time.process_time()
        for t in texts:
            guard.check(t)
        rounds.append((time.process_time() - start) * 1000 / len(texts))
    cost.rules_ms = sorted(rounds)[2]
    model = meaning_model(settings, engine, embedder)
    if model is not None:
        cost.layer, cost.threshold = "on", model.threshold
        cost.balanced_accuracy = model.balanced_accuracy
        vectors = embedder.embed(texts[:32], input_type="document").vectors
        every = range(len(texts))
        extra = len(readings_of(texts, every)) + len(parts_of(texts, every))
        rounds = []
        for _ in range(5):
            start = time.process_time()
            readings_of(texts, range(len(texts)))
            parts_of(texts, range(len(texts)))
            reading_ms = (time.process_time() - start) * 1000 / len(texts)
            start = time.process_time()
            for v in vectors:
                model.scores([v])
            per = (time.process_time() - start) * 1000 / len(vectors)
            rounds.append(reading_ms + per * (1 + extra / len(texts)))
        cost.meaning_ms = sorted(rounds)[2]
    return cost


def sample_turns() -> list[str]:
    corpus = resources.files("eros.data").joinpath("sample_corpus.jsonl")
    return [m["content"] for line in corpus.read_text(encoding="utf-8").splitlines()
            if line.strip() for m in json.loads(line)["messages"] if m["role"] == "user"]


def sample_corpus_full(settings: Settings, engine: Engine, embedder: Embedder
                       ) -> tuple[int, int, dict[str, int]]:
    """(turns, dropped, by layer): every user turn of the bundled sample corpus judged by the
    whole guard as if stored verbatim, length cap off."""
    relaxed = settings.model_copy(update={"memory_guard_max_chars": 10000})
    turns = sample_turns()
    screening = screen_texts(relaxed, engine, embedder, turns)
    layers: dict[str, int] = defaultdict(int)
    for v in screening.verdicts:
        if not v.ok:
            layers[v.layer or "?"] += 1
    return len(turns), sum(layers.values()), dict(layers)
