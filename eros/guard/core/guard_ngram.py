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

Two build-time options were added in the thirteenth round and measured on the blind sets'
folds (``bench/guard_indep.py``): word 1–2-grams beside the characters' (``words``) and
obfuscated training copies (``augment``: joiners, look-alike letters, other scripts' digits, on
attacks and look-alikes alike). Neither measured better; the shipped model has neither (its
JSON says which it has).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
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
#: punctuation stripped from a word's ends (marks stay: Indic vowel signs are part of a word)
_PUNCT = ("".join(chr(c) for c in range(0x2000, 0x2070))
          + "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~«»“”‘’„‚。、，！？：；（）「」『』【】《》・…")
_WORD_SALT = np.uint64(0x5851F42D4C957F2D)
#: word n-gram lengths of a ``words`` model
WORD_ORDERS = (1, 2)
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


def features(text: str, words: bool = False) -> tuple[Ints, Floats]:
    """(bucket indexes, values) of ``text``'s n-grams: presence, each order weighted alike,
    the row scaled to unit length (a long text does not score higher for its length).
    ``words``: its word 1- and 2-grams too (:data:`WORD_ORDERS`), hashed apart from the
    characters' (a whole word is evidence a character 4-gram cannot hold)."""
    prepared = prepare(text)
    codes = np.frombuffer(prepared.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
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
        if words:
            keys.append(word_keys(prepared))
    if not keys:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    index = np.unique(np.concatenate(keys)).astype(np.int64)
    return index, np.full(len(index), 1.0 / np.sqrt(len(index)))


def word_keys(prepared: str) -> npt.NDArray[np.uint64]:
    """Buckets of a prepared text's word 1- and 2-grams (words: runs of letters, marks and
    digits; CRC-32 of the gram with its order, so every process hashes alike)."""
    tokens = [w for w in (t.strip(_PUNCT) for t in prepared.split()) if w]
    grams = [f"1\x00{t}" for t in tokens]
    grams += [f"2\x00{a}\x00{b}" for a, b in itertools.pairwise(tokens)]
    if not grams:
        return np.zeros(0, dtype=np.uint64)
    crc = np.fromiter((zlib.crc32(g.encode("utf-8")) for g in grams), dtype=np.uint64,
                      count=len(grams))
    with np.errstate(over="ignore"):
        return (crc + _WORD_SALT) * _MIX >> _SHIFT


@dataclass(frozen=True)
class NgramModel:
    """Weights over the hashed n-grams, a bias and the drop threshold."""

    weights: npt.NDArray[np.float32]
    bias: float
    threshold: float
    #: digest of the texts and labels it was trained on (what ``ngram.json`` records)
    digest: str
    #: word 1- and 2-grams beside the characters' (:func:`features`)
    words: bool = False
    #: trained on obfuscated copies too (:func:`obfuscate`; recorded, not used to score)
    augment: bool = False

    def scores(self, texts: Sequence[str]) -> list[float]:
        """Probability that each text is an instruction."""
        out = []
        for text in texts:
            index, values = features(text, self.words)
            z = float(self.weights[index].astype(np.float64) @ values) + self.bias
            out.append(float(1.0 / (1.0 + np.exp(-min(40.0, max(-40.0, z))))))
        return out


def matrix(texts: Sequence[str], words: bool = False) -> tuple[Ints, Ints, Floats]:
    """(row of each entry, bucket, value) of ``texts``'s features: a sparse matrix."""
    rows, cols, vals = [], [], []
    for row, text in enumerate(texts):
        index, values = features(text, words)
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
                kept: float = NGRAM_KEPT, words: bool = False,
                augment: bool = False) -> NgramModel:
    """Weights from every text; the threshold from out-of-fold scores (:data:`FOLDS` splits):
    the lowest that keeps ``kept`` of the look-alikes, never below 0.5."""
    return train_ngrams(texts, labels, (kept,), words=words, augment=augment)[kept]


def train_ngrams(texts: Sequence[str], labels: Sequence[int], kepts: Sequence[float], *,
                 words: bool = False, augment: bool = False) -> dict[float, NgramModel]:
    """:func:`train_ngram` for several ``kept`` shares at the cost of one (same folds, same
    weights, a threshold each). ``augment``: each text is trained on with an obfuscated copy
    (:func:`obfuscate`, same label, same fold), attacks and look-alikes alike, so that a
    joiner, a look-alike letter or another script's digit is no evidence either way; the
    threshold is chosen on the original look-alikes' out-of-fold scores."""
    y0 = np.asarray(labels, dtype=np.int64)
    group = np.arange(len(y0))
    every = list(texts)
    if augment:
        rng = np.random.default_rng(13)
        copies = [(i, obfuscate(t, rng)) for i, t in enumerate(texts)]
        copies = [(i, c) for i, c in copies if c != texts[i]]
        every += [c for _, c in copies]
        group = np.concatenate([group, np.asarray([i for i, _ in copies], dtype=np.int64)])
    y = y0[group]
    original = np.arange(len(y)) < len(y0)
    sparse = matrix(every, words)
    rows, cols, vals = sparse
    order = np.random.default_rng(30).permutation(len(y0))
    fold0 = np.empty(len(y0), dtype=np.int64)
    fold0[order] = np.arange(len(y0)) % FOLDS
    fold = fold0[group]
    oof = np.zeros(len(y))
    for k in range(FOLDS):
        inside = fold[rows] != k
        renumber = np.cumsum(fold != k) - 1
        w, b = fit((renumber[rows[inside]], cols[inside], vals[inside]), y[fold != k])
        test = fold == k
        oof[test] = raw_scores(w, b, sparse, len(y))[test]
    benign = np.sort(oof[(y == 0) & original])
    w, b = fit(sparse, y)
    # the weights as shipped (half precision): scored here exactly as after loading
    weights = w.astype("<f2").astype(np.float32)
    digest = training_digest(texts, labels)
    out = {}
    for kept in kepts:
        index = min(len(benign) - 1, int(np.ceil(kept * len(benign))) - 1)
        out[kept] = NgramModel(weights, b, float(max(0.5, benign[index] + 1e-6)), digest,
                               words, augment)
    return out


#: Latin letters and the Cyrillic/Greek letters that look alike
_HOMOGLYPHS = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у",
               "i": "і", "s": "ѕ", "j": "ј", "h": "һ", "k": "κ", "n": "η", "v": "ν"}
#: what attacks join words with instead of a space
_JOINERS = ("-", "_", ".", "\u2800", "\u3164", "\u200b", "\u00a0", "/", "\u00b7")
#: zero of the digit scripts an attack writes numbers in (Arabic-Indic, Persian, Devanagari,
#: Bengali, Thai, fullwidth)
_ZEROS = (0x660, 0x6F0, 0x966, 0x9E6, 0xE50, 0xFF10)


def obfuscate(text: str, rng: np.random.Generator) -> str:
    """``text`` as an obfuscating writer would write it (build time only): its spaces as one
    joiner, its Latin letters partly as look-alikes, its digits in another script — two of
    the three, chosen at random."""
    kinds = rng.choice(3, size=2, replace=False)
    out = text
    if 0 in kinds:
        out = out.replace(" ", _JOINERS[int(rng.integers(len(_JOINERS)))])
    if 1 in kinds:
        swap = rng.random(len(out)) < 0.35
        out = "".join(_HOMOGLYPHS.get(ch, ch) if s else ch for ch, s in zip(out, swap,
                                                                           strict=True))
    if 2 in kinds:
        zero = _ZEROS[int(rng.integers(len(_ZEROS)))]
        out = "".join(chr(zero + ord(ch) - 48) if "0" <= ch <= "9" else ch for ch in out)
    return out


def training_digest(texts: Sequence[str], labels: Sequence[int]) -> str:
    """What a model was trained on, as 16 hex digits (order-independent)."""
    lines = sorted(f"{label}\t{text}" for text, label in zip(texts, labels, strict=True))
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def model_to_json(model: NgramModel) -> str:
    packed = base64.b64encode(zlib.compress(model.weights.astype("<f2").tobytes(), 9))
    return json.dumps({"buckets": BUCKETS, "orders": list(ORDERS),
                       "word_orders": list(WORD_ORDERS) if model.words else [],
                       "augmented": model.augment, "bias": model.bias,
                       "threshold": model.threshold, "digest": model.digest,
                       "weights_f16_zlib_b64": packed.decode("ascii")}, indent=1) + "\n"


def model_from_json(content: str) -> NgramModel:
    data = json.loads(content)
    if data["buckets"] != BUCKETS or tuple(data["orders"]) != ORDERS:
        raise ValueError("ngram model made for another feature space")
    raw = zlib.decompress(base64.b64decode(data["weights_f16_zlib_b64"]))
    weights = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    words = tuple(data.get("word_orders", ()))
    if words not in ((), WORD_ORDERS):
        raise ValueError("ngram model made for another feature space")
    return NgramModel(weights, float(data["bias"]), float(data["threshold"]), str(data["digest"]),
                      bool(words), bool(data.get("augmented", False)))


@lru_cache(maxsize=1)
def load_ngram() -> NgramModel | None:
    """The n-gram model shipped in the package (read once per process), or None."""
    resource = resources.files("eros.data").joinpath("guard/ngram.json")
    if not resource.is_file():
        return None
    return model_from_json(resource.read_text(encoding="utf-8"))
