"""A stacked decision over the memory guard's two classifiers (issue 30, thirteenth round):
measured by ``bench/guard_indep.py`` on the blind sets' folds and NOT shipped (it lets fewer
attacks through but keeps one look-alike fewer than the band rule: bench/RESULTS.md).

Below the meaning layer's threshold, the twelfth round let the n-gram classifier decide only
the meaning layer's uncertain band (a rectangle: meaning score ≥ ``band_low`` and n-gram score
≥ its own threshold, both hand-set). This is a logistic combination of the two scores' logits
(and their product), fitted on the scores the two models gave to the blind sets they were
not trained on (``bench/guard_indep.py``'s folds), with the threshold that keeps as many of
those look-alikes as the rectangle does: a diagonal boundary, so a memory both models find
half-suspect is judged together, and a clear n-gram signal counts a little lower in the band.

Were it shipped, it would be fitted ahead of time (``stack_to_json``), never on the work path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: the lowest meaning score the stack judges (below it a memory is kept whatever the n-gram
#: score says: the n-gram model alone loses ordinary memories)
FLOOR = 0.05


@dataclass(frozen=True)
class Stack:
    """Weights over (logit meaning, logit n-gram, their product), a bias, the threshold."""

    weights: tuple[float, float, float]
    bias: float
    threshold: float
    #: digest of the rows it was fitted on
    digest: str = ""

    def score(self, meaning: float, ngram: float) -> float:
        x = _features(meaning, ngram)
        z = float(np.dot(self.weights, x)) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def _logit(p: float) -> float:
    p = min(1 - 1e-6, max(1e-6, p))
    return math.log(p / (1 - p))


def _features(meaning: float, ngram: float) -> tuple[float, float, float]:
    lm, ln = _logit(meaning), _logit(ngram)
    return lm, ln, lm * ln / 10.0


def stack_drops(stack: Stack, meaning: float, ngram: float, family: str = "") -> bool:
    """Whether the stack drops a memory the meaning layer keeps (its score under its
    threshold)."""
    del family  # one threshold for every script family (per-family ones overfit: RESULTS)
    return meaning >= FLOOR and stack.score(meaning, ngram) >= stack.threshold


def num(row: Mapping[str, object], key: str) -> float:
    """A dumped row's number."""
    value = row[key]
    assert isinstance(value, int | float)
    return float(value)


def fit_stack(rows: Sequence[Mapping[str, object]], kept: float | None = None) -> Stack:
    """A stack from judged rows (``bench.guard_indep``'s: kind, rules_ok, meaning,
    meaning_threshold, band_low, ngram, ngram_threshold). ``kept``: the share of the
    look-alikes it judges that the threshold keeps; None: as many look-alikes as the band rule
    keeps on the same rows."""
    judged = [r for r in rows if r["rules_ok"]
              and FLOOR <= num(r, "meaning") < num(r, "meaning_threshold")]
    y = np.asarray([r["kind"] == "attack" for r in judged], dtype=np.float64)
    if y.sum() == 0 or y.sum() == len(y):
        return Stack((0.0, 0.0, 0.0), 0.0, 2.0)  # nothing to learn from: never drops
    x = np.asarray([_features(num(r, "meaning"), num(r, "ngram")) for r in judged])
    w, b = _fit(x, y)
    z = x @ w + b
    s = 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))
    benign = np.sort(s[y == 0])
    if kept is None:
        allowed = sum(1 for r, label in zip(judged, y, strict=True) if label == 0
                      and num(r, "meaning") >= num(r, "band_low")
                      and num(r, "ngram") >= num(r, "ngram_threshold"))
    else:
        allowed = math.floor((1 - kept) * len(benign))
    # the lowest threshold that drops at most ``allowed`` of these look-alikes
    threshold = float(benign[len(benign) - allowed - 1] + 1e-9) if allowed < len(benign) \
        else 0.0
    return Stack((float(w[0]), float(w[1]), float(w[2])), float(b), threshold)


def _fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-2,
         steps: int = 50) -> tuple[np.ndarray, float]:
    """Class-balanced L2 logistic regression by Newton steps (a few hundred rows)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    pos = max(1.0, y.sum())
    sample = np.where(y == 1, n / (2 * pos), n / (2 * max(1.0, n - pos)))
    beta = np.zeros(d + 1)
    reg = np.eye(d + 1) * l2
    reg[-1, -1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ beta, -40, 40)))
        grad = xb.T @ (sample * (p - y)) + reg @ beta
        hess = (xb * (sample * p * (1 - p))[:, None]).T @ xb + reg
        beta -= np.linalg.solve(hess, grad)
    return beta[:-1], float(beta[-1])


def stack_to_json(stack: Stack) -> str:
    return json.dumps({"weights": list(stack.weights), "bias": stack.bias,
                       "threshold": stack.threshold, "floor": FLOOR,
                       "digest": stack.digest}, indent=1) + "\n"


#: script families that get an indicator of their own in the ``fam`` feature set
FAMILIES = ("latin", "cyrillic", "arabic-hebrew", "indic", "cjk")


def rich_features(row: Mapping[str, object], kind: str) -> list[float]:
    """A row's features: ``2`` (the two logits), ``3`` (and their product), ``rich`` (also
    the meaning layer's own, reading and clause scores, the n-gram reading's lift, length),
    ``fam`` (and the script family)."""
    m, n = _logit(num(row, "meaning")), _logit(num(row, "ngram"))
    if kind == "2":
        return [m, n]
    if kind == "3":
        return [m, n, m * n / 10]
    own = _logit(num(row, "meaning_own"))
    read = _logit(num(row, "meaning_reading")) if row["meaning_reading"] is not None else own
    part = _logit(num(row, "meaning_clause")) if row["meaning_clause"] is not None else -5.0
    base = [m, n, own, part, read - own, n - _logit(num(row, "ngram_own")),
            math.log1p(num(row, "chars")) / 5, float(row["meaning_reading"] is not None)]
    return base + ([float(row["family"] == f) for f in FAMILIES] if kind == "fam" else [])


def nested(rows: Sequence[Mapping[str, object]], kind: str, floor: float,
           union: int | None) -> tuple[int, int, dict[str, tuple[int, int]]]:
    """(attacks through, look-alikes kept, per fold) when each fold is judged by a stack of
    ``kind`` fitted on the OTHER folds' rows with a meaning score in [``floor``, threshold).
    ``union`` None: the stack replaces the band rule, its threshold keeping as many training
    look-alikes as the band rule; else it drops beside the band rule, its threshold letting
    ``union`` training look-alikes the band rule keeps be dropped."""
    def judged(r: Mapping[str, object]) -> bool:
        return bool(r["rules_ok"]) and floor <= num(r, "meaning") < num(r, "meaning_threshold")

    def band(r: Mapping[str, object]) -> bool:
        return num(r, "meaning") >= num(r, "band_low") and \
            num(r, "ngram") >= num(r, "ngram_threshold")

    through = kept = 0
    per: dict[str, tuple[int, int]] = {}
    for fold in sorted({str(r["fold"]) for r in rows}):
        train = [r for r in rows if r["fold"] != fold and judged(r)]
        x = np.asarray([rich_features(r, kind) for r in train])
        y = np.asarray([r["kind"] == "attack" for r in train], dtype=np.float64)
        mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
        w, b = _fit((x - mean) / scale, y)

        def score(r: Mapping[str, object]) -> float:
            return float((np.asarray(rich_features(r, kind)) - mean) / scale @ w + b)  # noqa: B023

        benign = [r for r in train if r["kind"] != "attack" and (union is None or not band(r))]
        allowed = sum(band(r) for r in benign) if union is None else union
        ranked = sorted(score(r) for r in benign)
        threshold = ranked[len(ranked) - allowed - 1] + 1e-9
        t = k = 0
        for r in (r for r in rows if r["fold"] == fold):
            if not r["rules_ok"] or num(r, "meaning") >= num(r, "meaning_threshold"):
                keep = False
            else:
                keep = not (judged(r) and (score(r) >= threshold
                                           or (union is not None and band(r))))
            t += r["kind"] == "attack" and keep
            k += r["kind"] != "attack" and keep
        per[fold] = (t, k)
        through, kept = through + t, kept + k
    return through, kept, per


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m bench.guard_stack",
                                     description="stacks judged on bench.guard_indep's folds "
                                                 "(nested), from its --dump rows")
    parser.add_argument("rows", type=Path)
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.rows.read_text("utf-8").splitlines()]
    for kind in ("2", "3", "rich", "fam"):
        for floor in (0.05, 0.15):
            for union in (None, 0, 1):
                t, k, per = nested(rows, kind, floor, union)
                cells = " ".join(f"{f[-2:]}:{a}/{b}" for f, (a, b) in per.items())
                mode = "replace" if union is None else f"beside+{union}"
                print(f"{kind:<5}{floor:<6}{mode:<9}through {t:>3} kept {k:>5}  {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
