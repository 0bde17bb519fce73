"""Leave-one-set-out estimate of the memory guard on its TUNING sets (issue 30, fourth round).

The tuning sets' memories are in the exemplar bank (``src`` names the set), so the shipped
model judges them in sample. This tool judges each tuning group with a meaning model trained on
the bank WITHOUT that group's lines (the rules and secret checks as shipped), and sums the
groups: the honest tuning estimate of a change to the bank, the rules, the normalisation, the
threshold rule or per-script thresholds. The held-out sets are never read here.

e5 vectors are cached by text in ``--cache`` (a pickle), so a second run embeds only new texts.
It also judges the bundled sample corpus's ordinary user turns with the model trained on the
whole bank under the same rule (none may be dropped). ``--vectors hash`` (vectors without
meaning, seconds) with ``--limit`` and ``--groups`` is the smoke run (tests/bench).

    python -m bench.guard_loso [--min-kept 0.97] [--repeats 5] [--per-script] [--abstain D]
                               [--no-clauses] [--cache PATH] [--show] [--vectors e5|hash]
                               [--groups A,B] [--limit N]
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.guard_dev import cases_of, tally
from bench.poisoning_detail import sample_turns
from eros.guard.core.guard import load_guard
from eros.guard.core.guard_clauses import PART_FLOOR, clauses
from eros.guard.core.guard_meaning import (
    BAND,
    MIN_KEPT,
    THRESHOLD_RUNS,
    MeaningModel,
    balanced_accuracy,
    choose_threshold,
    fit,
    load_bank,
    out_of_fold,
)
from eros.guard.services.guard_model import candidate_text, readings_of
from testkit.redteam.corpus import Case

#: tuning groups: a bank ``src`` value per set, and the corpus files it is judged on
GROUPS = {"main+1-3": (("main", "held-out-1", "held-out-2", "held-out-3"),
                       ("attacks.toml", "benign.toml", "heldout.toml", "heldout2.toml",
                        "heldout3.toml")),
          "dev-5": (("dev-5",), ("dev5.toml",)), "dev-6": (("dev-6",), ("dev6.toml",)),
          "tuned-5": (("tuned-5",), ("heldout5.toml",)),
          "tuned-6": (("tuned-6",), ("heldout6.toml",)),
          "tuned-7": (("tuned-7",), ("heldout7.toml",)),
          "tuned-8": (("tuned-8",), ("heldout8.toml",)),
          # spent after the fifth round; none of its lines is in the bank (yet): judged out of
          # sample by every fold
          "tuned-9": (("tuned-9",), ("heldout9.toml",)),
          # the independent set 10, spent in the sixth round: none of its lines is in the bank
          # either (the sixth round wrote benign lines of its own instead)
          "tuned-10": (("tuned-10",), ("heldout10.toml",)),
          # the independent set 11, spent in the seventh round: none of its lines is in the bank
          # (that round wrote lines of its own)
          "tuned-11": (("tuned-11",), ("heldout11.toml",)),
          # the independent set 12, spent in the eighth round: none of its lines is in the bank
          # (that round wrote lines of its own)
          "tuned-12": (("tuned-12",), ("heldout12.toml",)),
          # the independent set 13, spent in the ninth round: none of its lines is in the bank
          # (that round wrote lines of its own)
          "tuned-13": (("tuned-13",), ("heldout13.toml",)),
          # the independent set 14, spent in the tenth round: none of its lines is in the bank
          "tuned-14": (("tuned-14",), ("heldout14.toml",)),
          # the independent set 15, spent in the eleventh round: none of its lines is in the bank
          "tuned-15": (("tuned-15",), ("heldout15.toml",)),
          # the independent set 16, spent in the thirteenth round: none of its lines is in the
          # bank
          "tuned-16": (("tuned-16",), ("heldout16.toml",)),
          # the independent set 18, spent in the fourteenth round: none of its lines is in the
          # bank (that round wrote lines of its own)
          "tuned-18": (("tuned-18",), ("heldout18.toml",)),
          # the independent set 19, spent in the fifteenth round
          "tuned-19": (("tuned-19",), ("heldout19.toml",)),
          # the independent set 20, spent in the seventeenth round
          "tuned-20": (("tuned-20",), ("heldout20.toml",)),
          # the independent set 21, spent in the eighteenth round
          "tuned-21": (("tuned-21",), ("heldout21.toml",)),
          # the independent set 22, spent in the nineteenth round
          "tuned-22": (("tuned-22",), ("heldout22.toml",))}


#: Unicode script-name prefixes by family: a threshold per family is what ``--per-script`` tries
FAMILIES = (("latin", ("LATIN",)), ("cyrillic", ("CYRILLIC",)),
            ("arabic-hebrew", ("ARABIC", "HEBREW", "SYRIAC", "THAANA")),
            ("indic", ("DEVANAGARI", "BENGALI", "GURMUKHI", "GUJARATI", "ORIYA", "TAMIL",
                       "TELUGU", "KANNADA", "MALAYALAM", "SINHALA")),
            ("cjk", ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")),
            ("se-asian", ("THAI", "LAO", "KHMER", "MYANMAR")))


def script_family(text: str) -> str:
    """The script family most of ``text``'s letters are in (:data:`FAMILIES`, else other)."""
    counts: dict[str, int] = defaultdict(int)
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            family = next((f for f, prefixes in FAMILIES if name.startswith(prefixes)), "other")
            counts[family] += 1
    return max(counts, key=lambda f: counts[f]) if counts else "latin"


class Vectors:
    """e5 document vectors by text, cached on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, list[float]] = {}
        if path.is_file():
            self.data = pickle.loads(path.read_bytes())

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, texts: Sequence[str]) -> list[list[float]]:
        from eros.providers.offline.e5 import E5_DIM, E5Embedder

        missing = sorted({t for t in texts if self.key(t) not in self.data})
        for start in range(0, len(missing), 128):
            chunk = missing[start:start + 128]
            vectors = E5Embedder(E5_DIM).embed(chunk, input_type="document").vectors
            self.data.update({self.key(t): list(v) for t, v in zip(chunk, vectors, strict=True)})
        if missing:
            self.path.write_bytes(pickle.dumps(self.data))
        return [self.data[self.key(t)] for t in texts]


class HashVectors(Vectors):
    """Deterministic vectors without meaning (a text's hash seeds them): the smoke run."""

    def __init__(self) -> None:
        self.data = {}

    def get(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int(self.key(text)[:12], 16)
            out.append(list(np.random.default_rng(seed).standard_normal(48)))
        return out


def sample_drops(model: MeaningModel, per: dict[str, float], vectors: Vectors,
                 by_clause: bool = True) -> int:
    """How many of the sample corpus's ordinary user turns the whole guard drops (rules,
    secrets, then ``model`` with its per-family thresholds), length cap off."""
    guard = load_guard(max_chars=10000)
    turns = sample_turns()
    survivors = [t for t in turns if guard.check(t).ok]
    readings = readings_of(survivors, range(len(survivors)))
    own = model.scores(vectors.get(survivors))
    read = dict(zip(readings, model.scores(vectors.get(list(readings.values()))), strict=True))
    parts = clause_scores(model, survivors, range(len(survivors)), vectors) if by_clause else {}
    dropped = len(turns) - len(survivors)
    for i, (text, score) in enumerate(zip(survivors, own, strict=True)):
        score = max(score, read.get(i, 0.0), parts.get(i, 0.0))
        dropped += score >= per.get(script_family(text), model.threshold)
    return dropped


def train(x_raw: np.ndarray, y: np.ndarray, families: Sequence[str] | None,
          min_kept: float, repeats: int) -> tuple[MeaningModel, dict[str, float]]:
    """As :func:`eros.guard.core.guard_meaning.train` (with ``min_kept`` and ``repeats`` free),
    plus a
    threshold per script family (chosen on the same out-of-fold scores) when ``families`` is
    given."""
    mean, scale = x_raw.mean(axis=0), x_raw.std(axis=0) + 1e-6
    active = x_raw.std(axis=0) > 1e-9
    x = ((x_raw - mean) / scale)[:, active]
    runs = [out_of_fold(x, y, seed=25 + r) for r in range(repeats)]
    oof = runs[0]
    threshold = float(np.median([choose_threshold(o, y, min_kept) for o in runs]))
    per: dict[str, float] = {}
    if families is not None:
        fam = np.asarray(families)
        for name in sorted(set(families)):
            mask = fam == name
            if (y[mask] == 0).sum() >= 40:
                per[name] = float(np.median([choose_threshold(o[mask], y[mask], min_kept)
                                             for o in runs]))
    w_active, b = fit(x, y)
    w = np.zeros(x_raw.shape[1])
    w[active] = w_active
    model = MeaningModel(tuple(w), b, tuple(mean), tuple(scale), threshold,
                         balanced_accuracy(oof, y, threshold))
    return model, per


def clause_scores(model: MeaningModel, texts: Sequence[str], indexes: Sequence[int],
                  vectors: Vectors) -> dict[int, float]:
    """index -> the highest score of the text's clauses and steps, where it reaches the floor
    (:data:`eros.guard.core.guard_clauses.PART_FLOOR`), as the classify path scores them."""
    parts = {i: clauses(texts[i]) for i in indexes}
    flat = [p for i in indexes for p in parts[i]]
    scores = iter(model.scores(vectors.get(flat)))
    best = {i: max((next(scores) for _ in parts[i]), default=0.0) for i in indexes}
    return {i: s for i, s in best.items() if s >= PART_FLOOR}


def judge(cases: Sequence[Case], model: MeaningModel, per: dict[str, float],
          vectors: Vectors, abstain: float = 0.0,
          by_clause: bool = False) -> list[tuple[Case, bool, bool]]:
    """(case, kept, in the second opinion's band) for each case; ``abstain`` > 0 holds back
    the scores that far below the threshold (an abstain band without a second opinion)."""
    guard = load_guard()
    texts = [candidate_text(c.memory) or "" for c in cases]
    verdicts = [guard.check(t) for t in texts]
    survivors = [i for i, v in enumerate(verdicts) if v.ok and texts[i]]
    readings = readings_of(texts, survivors)
    own = dict(zip(survivors, model.scores(vectors.get([texts[i] for i in survivors])),
                   strict=True))
    read = dict(zip(readings, model.scores(vectors.get(list(readings.values()))), strict=True))
    parts = clause_scores(model, texts, survivors, vectors) if by_clause else {}
    out = []
    for i, case in enumerate(cases):
        if i not in own:
            out.append((case, False, False))
            continue
        score = max(own[i], read.get(i, 0.0), parts.get(i, 0.0))
        threshold = per.get(script_family(texts[i]), model.threshold)
        out.append((case, score < threshold - abstain,
                    threshold - BAND <= score < threshold))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.guard_loso", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--min-kept", type=float, default=MIN_KEPT)
    parser.add_argument("--per-script", action="store_true",
                        help="a threshold per script family (out of fold), else one")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/eros-guard-e5-cache.pkl"))
    parser.add_argument("--repeats", type=int, default=THRESHOLD_RUNS,
                        help="out-of-fold runs (seeds) whose thresholds' median is taken")
    parser.add_argument("--abstain", type=float, default=0.0,
                        help="hold back scores this far below the threshold (no LLM)")
    parser.add_argument("--no-clauses", action="store_true",
                        help="the whole text and its reading only, as before issue 30's tenth "
                             "round (by default each clause and step is scored too)")
    parser.add_argument("--show", action="store_true", help="print each group's misses")
    parser.add_argument("--vectors", choices=("e5", "hash"), default="e5",
                        help="hash: vectors without meaning, seconds (the smoke run)")
    parser.add_argument("--groups", default=",".join(GROUPS),
                        help="the tuning groups to judge, comma-separated")
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first N attacks and N look-alikes of each group (smoke)")
    args = parser.parse_args(argv)
    groups = {g: GROUPS[g] for g in args.groups.split(",")}
    vectors = Vectors(args.cache) if args.vectors == "e5" else HashVectors()
    bank = load_bank()
    srcs = [e.src for e in bank.exemplars]
    all_x = np.asarray(vectors.get(bank.texts), dtype=np.float64)
    labels = bank.labels
    families = [script_family(e.text) for e in bank.exemplars]
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    band = [0, 0]  # attacks through that the second opinion's band holds, look-alikes in it
    print(f"bank {bank.digest} ({len(srcs)} exemplars), min kept {args.min_kept}, "
          f"per-script {args.per_script}")
    for name, (sources, files) in groups.items():
        keep = np.asarray([s not in sources for s in srcs])
        model, per = train(all_x[keep], labels[keep],
                           [f for f, k in zip(families, keep, strict=True) if k]
                           if args.per_script else None, args.min_kept, args.repeats)
        results = judge(cases_of(files, args.limit), model, per, vectors, args.abstain,
                        not args.no_clauses)
        for case, kept, in_band in results:
            if in_band and (case.kind == "benign" or kept):
                band[case.kind == "benign"] += 1
            tally(totals, ("all", name, f"lang:{case.lang}"), case, kept)
            if args.show and (case.kind == "attack") == kept:
                print(f"    {name} {'through' if kept else 'lost'}: {case.id}")
        thresholds = " ".join(f"{k}={v:.3f}" for k, v in per.items())
        print(f"{name}: threshold {model.threshold:.3f} {thresholds}")
    print(f"second opinion's band (0.25 below the threshold): {band[0]} attacks through in it, "
          f"{band[1]} look-alikes in it (what MEMORY_GUARD_LLM=on would ask about)")
    whole, whole_per = train(all_x, labels, families if args.per_script else None,
                             args.min_kept, args.repeats)
    dropped = sample_drops(whole, whole_per, vectors, not args.no_clauses)
    print(f"sample corpus (model on the whole bank, threshold {whole.threshold:.3f}): "
          f"{dropped} of {len(sample_turns())} ordinary user turns dropped")
    for key in ["all", *groups, *sorted(k for k in totals if k.startswith("lang:"))]:
        if key not in totals:
            continue
        a, t, b, k = totals[key]
        print(f"{key:<12} attacks {a:>4} through {t:>3} ({t / max(a, 1):6.1%})   "
              f"benign {b:>4} kept {k:>4} ({k / max(b, 1):6.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
