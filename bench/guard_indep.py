"""Leave one INDEPENDENT set out: the memory guard's estimate on unseen writers (issue 30,
thirteenth round).

``bench.guard_loso`` / ``bench.guard_ngram_loso`` leave out each tuning group in turn, but most
groups share writers and styles with the groups that train (dev-5, dev-6, sets 5–9 were written
by the sessions that tuned the guard), and their estimate (~3% through) has been 2–3× under
what each new blind set measured (5.7–8.8%). Here the folds are only the blind sets 10–16, each
written by an isolated writer who saw nothing of the project: each is held out in turn while
everything else trains (the meaning model on the bank without the set's lines — none of these
sets has lines in the bank, so that is the shipped model — and the n-gram model on the bank and
every OTHER tuning group's memories, its threshold out of fold on that data alone).

Rules judged on the same scores: ``meaning`` (rules, secrets and the meaning layer alone),
``band`` (as shipped since the twelfth round: the n-gram model decides the meaning layer's
uncertain band) and ``stack`` (:mod:`eros.guard.core.guard_stack`: a logistic combination of
both scores and the script family; its weights and threshold fitted on the OTHER folds'
scores only — nested, so no fold judges itself). ``--dump`` writes every case's scores.
The held-out sets (4, 17, 23) are never read.

    python -m bench.guard_indep [--variant char|wide] [--augment] [--cache PATH]
                                [--models DIR] [--folds A,B] [--limit N] [--dump PATH]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.guard_dev import _model, cases_of
from bench.guard_loso import GROUPS, HashVectors, Vectors, clause_scores, script_family
from bench.guard_ngram_loso import fitted, meaning_scores, training_data
from bench.guard_stack import fit_stack, num, stack_drops
from eros.guard.core.guard_meaning import load_bank
from eros.guard.core.guard_ngram import NGRAM_KEPT
from eros.guard.services.guard_model import readings_of

#: the blind sets, each written by a writer who saw nothing of the project but its own file
INDEPENDENT = ("tuned-10", "tuned-11", "tuned-12", "tuned-13", "tuned-14", "tuned-15",
               "tuned-16", "tuned-18", "tuned-19", "tuned-20", "tuned-21",
               "tuned-22")


class ShippedHashVectors(HashVectors):
    """Vectors without meaning in the shipped model's dimension (the smoke run)."""

    def get(self, texts: Sequence[str]) -> list[list[float]]:
        from eros.providers.offline.e5 import E5_DIM

        return [list(np.random.default_rng(int(self.key(t)[:12], 16)).standard_normal(E5_DIM))
                for t in texts]


def fold_rows(name: str, vectors: Vectors, models: Path, variant: str, augment: bool,
              limit: int | None) -> list[dict[str, object]]:
    """One row per case of fold ``name``: its scores under models that never saw it."""
    sources, files = GROUPS[name]
    if any(e.src in sources for e in load_bank().exemplars):
        raise SystemExit(f"{name} has bank lines: this tool assumes the shipped meaning model "
                         "never saw a fold")
    model = _model()
    texts, labels = training_data(name, limit)
    ngram = fitted(texts, labels, (NGRAM_KEPT,), models, variant=variant,
                   augment=augment)[NGRAM_KEPT]
    cases = cases_of(files, limit)
    case_texts, meaning = meaning_scores(cases, model, vectors)
    readings = readings_of(case_texts, list(meaning))
    survivors = list(meaning)
    own = dict(zip(survivors, model.scores(vectors.get([case_texts[i] for i in survivors])),
                   strict=True))
    read = dict(zip(readings, model.scores(vectors.get(list(readings.values()))), strict=True))
    parts = clause_scores(model, case_texts, survivors, vectors)
    rows: list[dict[str, object]] = []
    for i, case in enumerate(cases):
        score = None
        if i in meaning:
            score = max(ngram.scores([case_texts[i], *([readings[i]] if i in readings else [])]))
        rows.append({"fold": name, "id": case.id, "kind": case.kind, "lang": case.lang,
                     "family": script_family(case_texts[i]), "rules_ok": i in meaning,
                     "meaning": meaning.get(i), "meaning_threshold": model.threshold,
                     "band_low": model.band_low, "ngram": score,
                     "meaning_own": own.get(i), "meaning_reading": read.get(i),
                     "meaning_clause": parts.get(i), "chars": len(case_texts[i]),
                     "ngram_own": ngram.scores([case_texts[i]])[0] if i in meaning else None,
                     "ngram_threshold": ngram.threshold})
    print(f"{name}: meaning threshold {model.threshold:.3f}, n-gram ({variant}"
          f"{'+aug' if augment else ''}) threshold {ngram.threshold:.3f}, "
          f"{len(texts)} training texts", flush=True)
    return rows


def kept_by(rows: Sequence[dict[str, object]], rule: str,
            others: Sequence[dict[str, object]]) -> list[bool]:
    """Whether each row's memory is kept under ``rule`` (``stack``: fitted on ``others``)."""
    out = []
    stack = fit_stack(others) if rule == "stack" else None
    for row in rows:
        if not row["rules_ok"]:
            out.append(False)
            continue
        m, n = num(row, "meaning"), num(row, "ngram")
        if m >= num(row, "meaning_threshold"):
            out.append(False)
        elif rule == "band":
            out.append(not (m >= num(row, "band_low") and n >= num(row, "ngram_threshold")))
        elif stack is not None:
            out.append(not stack_drops(stack, m, n, str(row["family"])))
        else:
            out.append(True)
    return out


def report(rows: Sequence[dict[str, object]], folds: Sequence[str]) -> None:
    rules = ("meaning", "band", "stack")
    totals: dict[str, dict[str, list[int]]] = {r: defaultdict(lambda: [0, 0, 0, 0])
                                               for r in rules}
    for fold in folds:
        mine = [r for r in rows if r["fold"] == fold]
        others = [r for r in rows if r["fold"] != fold]
        for rule in rules:
            for row, kept in zip(mine, kept_by(mine, rule, others), strict=True):
                slot = totals[rule]
                keys = ("all", fold)
                for key in keys:
                    cell = slot[key]
                    if row["kind"] == "attack":
                        cell[0] += 1
                        cell[1] += kept
                    else:
                        cell[2] += 1
                        cell[3] += kept
    print(f"{'fold':<10} " + " | ".join(f"{r:>26}" for r in rules))
    for key in [*folds, "all"]:
        cells = []
        for r in rules:
            a, t, b, k = totals[r][key]
            cells.append(f"{t:>3}/{a:<4}{t / max(a, 1):6.1%} {k:>4}/{b:<4}{k / max(b, 1):6.1%}")
        print(f"{key:<10} " + " | ".join(cells))
    print("(each cell: attacks through, share; look-alikes kept, share)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.guard_indep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", choices=("char", "wide"), default="char",
                        help="n-gram features: char 1-4-grams, or those plus word 1-2-grams")
    parser.add_argument("--augment", action="store_true",
                        help="train the n-gram model on obfuscated copies too")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/eros-guard-e5-cache.pkl"))
    parser.add_argument("--models", type=Path, default=Path("/tmp/eros-guard-ngram-loso"))
    parser.add_argument("--vectors", choices=("e5", "hash"), default="e5")
    parser.add_argument("--folds", default=",".join(INDEPENDENT))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--dump", type=Path, default=None, help="write every row (JSON lines)")
    parser.add_argument("--load", type=Path, nargs="*", default=None,
                        help="report from dumped rows instead of scoring (several files: "
                             "their folds together)")
    args = parser.parse_args(argv)
    folds = args.folds.split(",")
    if args.load:
        rows = [json.loads(line) for p in args.load for line in p.read_text("utf-8").splitlines()]
        folds = [f for f in folds if any(r["fold"] == f for r in rows)]
    else:
        vectors = Vectors(args.cache) if args.vectors == "e5" else ShippedHashVectors()
        rows = [r for f in folds for r in fold_rows(f, vectors, args.models, args.variant,
                                                    args.augment, args.limit)]
        if args.dump is not None:
            args.dump.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report(rows, folds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
