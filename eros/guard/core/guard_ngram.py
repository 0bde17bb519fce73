"""The memory guard's second classifier: hashed character n-grams (issue 30, twelfth round).

The meaning layer judges a candidate from its e5 embedding alone; eleven rounds of bank lines
and rules left it letting 6–9% of each new writer's attacks through. This layer is independent
of the embedding: a linear model over the text's character 1–4-grams (language-agnostic, no
tokenizer, hashed into :data:`BUCKETS` weights), trained on the exemplar bank and the tuning
sets' labelled memories. Its errors are not the embedding's errors — it sees spelling, script
and the literal words an instruction uses ("from now on", "always", "never refuse") where e5
sees a topic — so the fused rule (:func:`eros.guard.services.guard_model.screen_texts`: where
the meaning layer is unsure — its uncertain band — this model decides) catches what one alone
misses.

Pure numpy, no embedding call: scoring costs tens of microseconds a text. The weights are
fitted ahead of time (``scripts/ship_guard_ngram.py``) and shipped in the package
(``eros/data/guard/ngram.json``, with the digest of what it was trained on); nothing here is
trained on the work path. The hash is a fixed polynomial over code points (never Python's
salted ``hash``), so every process scores alike.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import numpy.typing as npt

#: hashed feature space (2**18 weights: few collisions among the training texts' n-grams)
BUCKETS = 1 << 18
#: character n-gram lengths (1 to 4)
ORDERS = (1, 2, 3, 4)
#: at most this many characters of a text are read (a long text by its opening)
MAX_CHARS = 1000
_PRIME = np.uint64(1_000_003)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(64 - 18)
_SPACE = re.compile(r"\s+")
#: share of the training look-alikes the n-gram threshold keeps out of fold: far stricter than
#: the meaning layer's 0.98, so that the fused rule (this model decides the meaning layer's
#: uncertain band) loses few more
NGRAM_KEPT = 0.995
#: out-of-fold splits for the threshold
FOLDS = 4

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def prepare(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed, padded with a space at each end (so word
    starts and ends are n-grams of their own)."""
    folded = unicodedata.normalize("NFKC", text[:MAX_CHARS]).casefold()
    return f" {_SPACE.sub(' ', folded).strip()} "


def features(text: str) -> tuple[Ints, Floats]:
    """(bucket indexes, values) of ``text``'s n-grams: presence, each order weighted alike,
    the row scaled to unit length (a long text does not score higher for its length)."""
    codes = np.frombuffer(prepare(text).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    keys: list[npt.NDArray[np.uint64]] = []
    with np.errstate(over="ignore"):  # the hash wraps around 2**64 by design
        rolling = np.zeros(len(codes), dtype=np.uint64)
        for order in range(1, max(ORDERS) + 1):
            if order > len(codes):
                break
            rolling = rolling[: len(codes) - order + 1] * _PRIME + codes[order - 1:] \
                + np.uint64(order)
            if order in ORDERS:
                keys.append(rolling * _MIX >> _SHIFT)
    if not keys:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    index = np.unique(np.concatenate(keys)).astype(np.int64)
    return index, np.full(len(index), 1.0 / np.sqrt(len(index)))


@dataclass(frozen=True)
class NgramModel:
    """Weights over the hashed n-grams, a bias and the drop threshold."""

    weights: npt.NDArray[np.float32]
    bias: float
    threshold: float
    #: digest of the texts and labels it was trained on (what ``ngram.json`` records)
    digest: str

    def scores(self, texts: Sequence[str]) -> list[float]:
        """Probability that each text is an instruction."""
        out = []
        for text in texts:
            index, values = features(text)
            z = float(self.weights[index].astype(np.float64) @ values) + self.bias
            out.append(float(1.0 / (1.0 + np.exp(-min(40.0, max(-40.0, z))))))
        return out


def matrix(texts: Sequence[str]) -> tuple[Ints, Ints, Floats]:
    """(row of each entry, bucket, value) of ``texts``'s features: a sparse matrix."""
    rows, cols, vals = [], [], []
    for row, text in enumerate(texts):
        index, values = features(text)
        rows.append(np.full(len(index), row, dtype=np.int64))
        cols.append(index)
        vals.append(values)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def fit(sparse: tuple[Ints, Ints, Floats], y: Ints, *, l2: float = 1e-6,
        epochs: int = 100, rate: float = 0.5) -> tuple[npt.NDArray[np.float32], float]:
    """L2-regularised logistic regression, classes weighted equally, by full-batch Adam over
    the sparse matrix (build time only: a few seconds for the bank and the tuning sets)."""
    rows, cols, vals = sparse
    n = len(y)
    pos = max(1, int(y.sum()))
    sample = np.where(y == 1, n / (2 * pos), n / (2 * max(1, n - pos))) / n
    w = np.zeros(BUCKETS)
    b = 0.0
    m_w, v_w = np.zeros(BUCKETS), np.zeros(BUCKETS)
    m_b = v_b = 0.0
    for step in range(1, epochs + 1):
        z = np.bincount(rows, weights=w[cols] * vals, minlength=n) + b
        g = sample * (1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))) - y)
        grad_w = np.bincount(cols, weights=vals * g[rows], minlength=BUCKETS) + l2 * w
        grad_b = float(g.sum())
        m_w = 0.9 * m_w + 0.1 * grad_w
        v_w = 0.999 * v_w + 0.001 * grad_w ** 2
        m_b = 0.9 * m_b + 0.1 * grad_b
        v_b = 0.999 * v_b + 0.001 * grad_b ** 2
        scale = rate * np.sqrt(1 - 0.999 ** step) / (1 - 0.9 ** step)
        w -= scale * m_w / (np.sqrt(v_w) + 1e-8)
        b -= scale * m_b / (np.sqrt(v_b) + 1e-8)
        rate_decay = 0.995
        rate *= rate_decay
    return w.astype(np.float32), b


def raw_scores(w: npt.NDArray[np.float32], b: float,
               sparse: tuple[Ints, Ints, Floats], n: int) -> Floats:
    rows, cols, vals = sparse
    z = np.bincount(rows, weights=w[cols].astype(np.float64) * vals, minlength=n) + b
    out: Floats = 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))
    return out


def train_ngram(texts: Sequence[str], labels: Sequence[int], *,
                kept: float = NGRAM_KEPT) -> NgramModel:
    """Weights from every text; the threshold from out-of-fold scores (:data:`FOLDS` splits):
    the lowest that keeps ``kept`` of the look-alikes, never below 0.5."""
    return train_ngrams(texts, labels, (kept,))[kept]


def train_ngrams(texts: Sequence[str], labels: Sequence[int],
                 kepts: Sequence[float]) -> dict[float, NgramModel]:
    """:func:`train_ngram` for several ``kept`` shares at the cost of one (same folds, same
    weights, a threshold each)."""
    y = np.asarray(labels, dtype=np.int64)
    sparse = matrix(texts)
    rows, cols, vals = sparse
    order = np.random.default_rng(30).permutation(len(y))
    fold = np.empty(len(y), dtype=np.int64)
    fold[order] = np.arange(len(y)) % FOLDS
    oof = np.zeros(len(y))
    for k in range(FOLDS):
        inside = fold[rows] != k
        renumber = np.cumsum(fold != k) - 1
        w, b = fit((renumber[rows[inside]], cols[inside], vals[inside]), y[fold != k])
        test = fold == k
        oof[test] = raw_scores(w, b, sparse, len(y))[test]
    benign = np.sort(oof[y == 0])
    w, b = fit(sparse, y)
    # the weights as shipped (half precision): scored here exactly as after loading
    weights = w.astype("<f2").astype(np.float32)
    digest = training_digest(texts, labels)
    out = {}
    for kept in kepts:
        index = min(len(benign) - 1, int(np.ceil(kept * len(benign))) - 1)
        out[kept] = NgramModel(weights, b, float(max(0.5, benign[index] + 1e-6)), digest)
    return out


def training_digest(texts: Sequence[str], labels: Sequence[int]) -> str:
    """What a model was trained on, as 16 hex digits (order-independent)."""
    lines = sorted(f"{label}\t{text}" for text, label in zip(texts, labels, strict=True))
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def model_to_json(model: NgramModel) -> str:
    packed = base64.b64encode(zlib.compress(model.weights.astype("<f2").tobytes(), 9))
    return json.dumps({"buckets": BUCKETS, "orders": list(ORDERS), "bias": model.bias,
                       "threshold": model.threshold, "digest": model.digest,
                       "weights_f16_zlib_b64": packed.decode("ascii")}, indent=1) + "\n"


def model_from_json(content: str) -> NgramModel:
    data = json.loads(content)
    if data["buckets"] != BUCKETS or tuple(data["orders"]) != ORDERS:
        raise ValueError("ngram model made for another feature space")
    raw = zlib.decompress(base64.b64decode(data["weights_f16_zlib_b64"]))
    weights = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    return NgramModel(weights, float(data["bias"]), float(data["threshold"]), str(data["digest"]))


@lru_cache(maxsize=1)
def load_ngram() -> NgramModel | None:
    """The n-gram model shipped in the package (read once per process), or None."""
    resource = resources.files("eros.data").joinpath("guard/ngram.json")
    if not resource.is_file():
        return None
    return model_from_json(resource.read_text(encoding="utf-8"))
