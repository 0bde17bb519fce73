"""The memory guard's meaning layer: "a statement about the user" or "a rule,
instruction, role or tool directive for the assistant", judged from the candidate's own
embedding, in any language.

A small logistic regression over the embedding the classify path computes anyway (no extra
embedding call per candidate), trained per embedding model on a labelled, multilingual exemplar
bank shipped in the package (``eros/data/guard/bank.jsonl``). Pure numpy; the only reads are
package resources. The model is made ahead of time, never inside a task: shipped
pre-trained for the offline e5 embedder (``eros/data/guard/<model>.json``, with the bank's
digest; ``scripts/ship_guard_model.py`` regenerates it), trained for a live embedder by
``eros migrate`` / ``eros guard train`` / a starting worker
(:mod:`eros.guard.services.guard_training`)
and kept in the database keyed by (embedding model, bank hash).

The drop threshold is chosen on out-of-fold scores of the bank itself (k-fold cross-validation:
the validation split), never on a held-out set: the lowest threshold that keeps at least
``min_kept`` of the bank's statements out of fold, as the median over :data:`THRESHOLD_RUNS`
runs with different folds. When the embedding carries no meaning (the
hash embedder, a fake) the cross-validated balanced accuracy is low and the layer reports
itself unusable rather than dropping at random.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]
#: the bank's two labels; ``instruction`` is what the layer drops.
LABELS = ("statement", "instruction")
#: below this cross-validated balanced accuracy the embedding is taken to carry no meaning.
MIN_BALANCED_ACCURACY = 0.8
#: share of the bank's statements the threshold must keep out of fold.
MIN_KEPT = 0.98
#: share of benign user turns (ordinary conversation and look-alikes of the tuning sets) the
#: turn threshold must keep.
TURN_MIN_KEPT = 0.999
#: out-of-fold runs (each with its own random folds) whose thresholds' median is the model's
#: (one run alone moved its threshold by 0.035 when 14 lines were added to the bank).
THRESHOLD_RUNS = 5
#: width of the uncertain band below the threshold (probability units), for the LLM opinion.
BAND = 0.25


@dataclass(frozen=True)
class Exemplar:
    text: str
    label: str
    lang: str
    #: the red-team tuning set the line was taken from ("" for the bank's own lines)
    src: str = ""


@dataclass(frozen=True)
class Bank:
    exemplars: tuple[Exemplar, ...]
    digest: str

    @property
    def texts(self) -> list[str]:
        return [e.text for e in self.exemplars]

    @property
    def labels(self) -> npt.NDArray[np.int64]:
        return np.array([LABELS.index(e.label) for e in self.exemplars], dtype=np.int64)


def parse_bank(content: str) -> Bank:
    """A bank from its JSON lines (``{"label", "lang", "text"}``); the digest is the content's."""
    items = []
    for n, line in enumerate(content.splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("label") not in LABELS or not str(record.get("text", "")).strip():
            raise ValueError(f"guard bank line {n}: needs a label in {LABELS} and a text")
        items.append(Exemplar(str(record["text"]), record["label"], str(record.get("lang", "")),
                              str(record.get("src", ""))))
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]
    return Bank(tuple(items), digest)


@lru_cache(maxsize=1)
def load_bank() -> Bank:
    """The exemplar bank shipped in the package (read once per process)."""
    return parse_bank(resources.files("eros.data").joinpath("guard/bank.jsonl")
                      .read_text(encoding="utf-8"))


@dataclass(frozen=True)
class MeaningModel:
    """A trained classifier: weights over the embedding, a bias, the drop threshold."""

    weights: tuple[float, ...]
    bias: float
    #: per-dimension centre and scale of the bank's embeddings (features are standardised).
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float
    #: out-of-fold balanced accuracy on the bank: how well the embedding separates the labels.
    balanced_accuracy: float
    #: the drop threshold for a user's own turn (issue 30/31), fitted at ship time on ordinary
    #: and look-alike turns (scripts/ship_guard_turns.py); None: a turn is held to
    #: ``threshold`` like a memory (a model trained for a live embedder has none yet).
    turn_threshold: float | None = None

    @property
    def usable(self) -> bool:
        return self.balanced_accuracy >= MIN_BALANCED_ACCURACY

    @property
    def band_low(self) -> float:
        return max(0.0, self.threshold - BAND)

    @property
    def turn_cut(self) -> float:
        """What a user turn must score to be dropped: a turn is conversation, not a memory the
        assistant will follow, so it is held to its own (higher) threshold when one is fitted."""
        return self.threshold if self.turn_threshold is None else self.turn_threshold

    @property
    def turn_band_low(self) -> float:
        return max(0.0, self.turn_cut - BAND)

    def scores(self, vectors: Sequence[Sequence[float]]) -> list[float]:
        """Probability that each vector is an instruction."""
        if not vectors:
            return []
        w = np.asarray(self.weights, dtype=np.float64)
        x = np.asarray([list(v)[: len(w)] for v in vectors], dtype=np.float64)
        x = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return [float(p) for p in _sigmoid(x @ w + self.bias)]


def model_to_dict(model: MeaningModel) -> dict[str, object]:
    out: dict[str, object] = {
        "weights": list(model.weights), "bias": model.bias, "mean": list(model.mean),
        "scale": list(model.scale), "threshold": model.threshold,
        "balanced_accuracy": model.balanced_accuracy}
    if model.turn_threshold is not None:
        out["turn_threshold"] = model.turn_threshold
    return out


def model_from_dict(data: dict[str, Any]) -> MeaningModel:
    return MeaningModel(tuple(float(v) for v in data["weights"]), float(data["bias"]),
                        tuple(float(v) for v in data["mean"]),
                        tuple(float(v) for v in data["scale"]), float(data["threshold"]),
                        float(data["balanced_accuracy"]),
                        None if data.get("turn_threshold") is None
                        else float(data["turn_threshold"]))


def shipped_path(embedding_model: str) -> str:
    """Where the package keeps the pre-trained model of ``embedding_model`` (if it ships one)."""
    return f"guard/{embedding_model}.json"


@lru_cache(maxsize=8)
def load_shipped(embedding_model: str, bank_digest: str) -> MeaningModel | None:
    """The model shipped in the package for this embedder and this bank, or None (none is
    shipped, or it was trained on another version of the bank: then it is not used)."""
    resource = resources.files("eros.data").joinpath(shipped_path(embedding_model))
    if not resource.is_file():
        return None
    data = json.loads(resource.read_text(encoding="utf-8"))
    if data.get("bank_digest") != bank_digest or data.get("embedding_model") != embedding_model:
        return None
    return model_from_dict(data["model"])


def _sigmoid(z: Matrix) -> Matrix:
    out: Matrix = 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))
    return out


def fit(x: Matrix, y: npt.NDArray[np.int64], *, l2: float = 1e-2,
        iterations: int = 20) -> tuple[Matrix, float]:
    """L2-regularised logistic regression by Newton's method (IRLS), classes weighted equally."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    pos = max(1, int(y.sum()))
    neg = max(1, n - pos)
    sample = np.where(y == 1, n / (2 * pos), n / (2 * neg))
    beta = np.zeros(d + 1)
    ridge = l2 * n * np.eye(d + 1)
    ridge[d, d] = 0.0
    for _ in range(iterations):
        p = _sigmoid(xb @ beta)
        grad = xb.T @ (sample * (p - y)) + ridge @ beta
        hess = (xb * (sample * p * (1 - p))[:, None]).T @ xb + ridge
        step = np.linalg.solve(hess, grad)
        beta -= step
        if float(np.abs(step).max()) < 1e-4:
            break
    return beta[:d], float(beta[d])


def out_of_fold(x: Matrix, y: npt.NDArray[np.int64], folds: int = 5,
                seed: int = 25) -> Matrix:
    """Each exemplar's score from a model trained without its fold (the validation split)."""
    order = np.random.default_rng(seed).permutation(len(y))
    scores = np.zeros(len(y))
    for k in range(folds):
        test = order[k::folds]
        train = np.setdiff1d(order, test)
        w, b = fit(x[train], y[train])
        scores[test] = _sigmoid(x[test] @ w + b)
    return scores


def choose_threshold(scores: Matrix, y: npt.NDArray[np.int64],
                     min_kept: float = MIN_KEPT) -> float:
    """The lowest threshold keeping ``min_kept`` of the statements (out of fold), never below
    0.5."""
    benign = np.sort(scores[y == 0])
    if len(benign) == 0:
        return 0.5
    index = min(len(benign) - 1, int(np.ceil(min_kept * len(benign))) - 1)
    return float(max(0.5, benign[index] + 1e-6))


def choose_turn_threshold(threshold: float, benign: Sequence[float]) -> float:
    """The turn threshold (issue 30/31): the lowest that keeps :data:`TURN_MIN_KEPT` of the
    benign turns' scores (ordinary conversation and look-alikes together), never below the
    memory ``threshold``. A kept turn is recalled as what the user said, quoted and dated,
    never followed, and the memory made from it is judged at ``threshold`` again: a turn is
    dropped only where benign conversation all but never reaches."""
    ranked = np.sort(np.asarray(benign, dtype=np.float64))
    if not len(ranked):
        return threshold
    index = min(len(ranked) - 1, int(np.ceil(TURN_MIN_KEPT * len(ranked))) - 1)
    return float(min(1.0, max(threshold, float(ranked[index]) + 1e-6)))


def balanced_accuracy(scores: Matrix, y: npt.NDArray[np.int64], threshold: float) -> float:
    drop = scores >= threshold
    tpr = float(drop[y == 1].mean()) if (y == 1).any() else 1.0
    tnr = float((~drop[y == 0]).mean()) if (y == 0).any() else 1.0
    return (tpr + tnr) / 2


def train(vectors: Sequence[Sequence[float]], labels: npt.NDArray[np.int64]) -> MeaningModel:
    """Threshold from the bank's out-of-fold scores — the median of :data:`THRESHOLD_RUNS`
    runs with different folds, so a few lines near the boundary do not move it much — weights
    from the whole bank."""
    raw = np.asarray(vectors, dtype=np.float64)
    mean, scale = raw.mean(axis=0), raw.std(axis=0) + 1e-6
    # dimensions that never vary (e5's zero padding) carry nothing: trained without them
    active = raw.std(axis=0) > 1e-9
    x = ((raw - mean) / scale)[:, active]
    runs = [out_of_fold(x, labels, seed=25 + r) for r in range(THRESHOLD_RUNS)]
    threshold = float(np.median([choose_threshold(oof, labels) for oof in runs]))
    accuracy = float(np.mean([balanced_accuracy(oof, labels, threshold) for oof in runs]))
    w_active, b = fit(x, labels)
    w = np.zeros(raw.shape[1])
    w[active] = w_active
    return MeaningModel(tuple(float(v) for v in w), b, tuple(float(v) for v in mean),
                        tuple(float(v) for v in scale), threshold, accuracy)
