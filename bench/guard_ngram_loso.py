"""Leave-one-set-out: the shipped guard (rules, secrets, meaning layer) against the same guard
fused with the character n-gram classifier (issue 30, twelfth round), in one run.

For each tuning group of :data:`bench.guard_loso.GROUPS`, both the meaning model and the n-gram
model are trained WITHOUT that group (the meaning model on the bank minus the group's lines, as
``bench.guard_loso``; the n-gram model on the bank minus those lines plus the other groups'
labelled memories, its threshold chosen out of fold on that training data alone), and the group
is judged by both rules: "meaning" (the meaning layer alone) and "fused" (as shipped since issue
30's twelfth round: a memory the meaning layer scores in its uncertain band, less than
``BAND`` below its threshold, is dropped when the n-gram model reaches its own threshold).
``--dump`` writes every case's scores, so other fusion rules can be judged from one run. The
held-out sets are never read.

    python -m bench.guard_ngram_loso [--kept 0.995 ...] [--cache PATH] [--models DIR]
                                     [--groups A,B] [--limit N] [--vectors e5|hash] [--show]
                                     [--variant char|wide] [--augment]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.guard_dev import cases_of, tally
from bench.guard_loso import GROUPS, HashVectors, Vectors, clause_scores, train
from eros.guard.core.guard import load_guard
from eros.guard.core.guard_meaning import MIN_KEPT, THRESHOLD_RUNS, MeaningModel, load_bank
from eros.guard.core.guard_ngram import (
    NGRAM_KEPT,
    NgramModel,
    model_from_json,
    model_to_json,
    train_ngrams,
    training_digest,
)
from eros.guard.services.guard_model import candidate_text, readings_of
from testkit.redteam.corpus import Case


def labelled(groups: Sequence[str], limit: int | None = None) -> tuple[list[str], list[int]]:
    """The memories of ``groups``' cases as (texts, labels), as the classify path sees them."""
    texts, labels = [], []
    for name in groups:
        for case in cases_of(GROUPS[name][1], limit):
            text = candidate_text(case.memory)
            if text:
                texts.append(text)
                labels.append(int(case.kind == "attack"))
    return texts, labels


def training_data(leave_out: str | None = None,
                  limit: int | None = None) -> tuple[list[str], list[int]]:
    """What the n-gram model is trained on: the exemplar bank and every tuning group's labelled
    memories (:data:`bench.guard_loso.GROUPS`; the held-out sets are not among them), without
    ``leave_out``'s (its bank lines and its cases) when given; ``limit``: the smoke run's
    first bank lines and cases only."""
    bank = load_bank()
    sources = GROUPS[leave_out][0] if leave_out else ()
    keep = [e.src not in sources for e in bank.exemplars]
    texts = [t for t, k in zip(bank.texts, keep, strict=True) if k]
    labels = [int(v) for v, k in zip(bank.labels, keep, strict=True) if k]
    more, more_labels = labelled([g for g in GROUPS if g != leave_out], limit)
    if limit is not None:
        texts, labels = texts[:limit] + texts[-limit:], labels[:limit] + labels[-limit:]
    return texts + more, labels + more_labels


def fitted(texts: list[str], labels: list[int], kepts: Sequence[float],
           models: Path, *, variant: str = "char",
           augment: bool = False) -> dict[float, NgramModel]:
    """The n-gram models of these texts (a threshold each; ``variant`` ``wide``: word
    n-grams too; ``augment``: obfuscated copies too), from ``models`` when fitted before (a
    second run fits nothing)."""
    tag = ("-wide" if variant == "wide" else "") + ("-aug" if augment else "")
    paths = {k: models / f"{training_digest(texts, labels)}{tag}-{k}.json" for k in kepts}
    if all(p.is_file() for p in paths.values()):
        return {k: model_from_json(p.read_text(encoding="utf-8")) for k, p in paths.items()}
    out = train_ngrams(texts, labels, kepts, words=variant == "wide", augment=augment)
    models.mkdir(parents=True, exist_ok=True)
    for k, path in paths.items():
        path.write_text(model_to_json(out[k]), encoding="utf-8")
    return out


def meaning_scores(cases: Sequence[Case], model: MeaningModel,
                   vectors: Vectors) -> tuple[list[str], dict[int, float]]:
    """(texts, index -> the meaning layer's score) for the cases the rules keep."""
    guard = load_guard()
    texts = [candidate_text(c.memory) or "" for c in cases]
    survivors = [i for i, t in enumerate(texts) if t and guard.check(t).ok]
    readings = readings_of(texts, survivors)
    own = dict(zip(survivors, model.scores(vectors.get([texts[i] for i in survivors])),
                   strict=True))
    read = dict(zip(readings, model.scores(vectors.get(list(readings.values()))), strict=True))
    parts = clause_scores(model, texts, survivors, vectors)
    return texts, {i: max(s, read.get(i, 0.0), parts.get(i, 0.0)) for i, s in own.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.guard_ngram_loso", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kept", type=float, nargs="+", default=[NGRAM_KEPT],
                        help="share of the training look-alikes the n-gram threshold keeps "
                             "out of fold (several: one fused column each)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/eros-guard-e5-cache.pkl"))
    parser.add_argument("--models", type=Path, default=Path("/tmp/eros-guard-ngram-loso"),
                        help="where each fold's fitted n-gram model is kept for the next run")
    parser.add_argument("--vectors", choices=("e5", "hash"), default="e5")
    parser.add_argument("--variant", choices=("char", "wide"), default="char",
                        help="n-gram features: char 1-4-grams, or those plus word 1-2-grams")
    parser.add_argument("--augment", action="store_true",
                        help="train the n-gram model on obfuscated copies too")
    parser.add_argument("--groups", default=",".join(GROUPS))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--show", action="store_true", help="print the fused rule's misses")
    parser.add_argument("--dump", type=Path, default=None,
                        help="write each judged case's scores and thresholds (JSON lines)")
    args = parser.parse_args(argv)
    names = args.groups.split(",")
    vectors = Vectors(args.cache) if args.vectors == "e5" else HashVectors()
    bank = load_bank()
    srcs = [e.src for e in bank.exemplars]
    all_x = np.asarray(vectors.get(bank.texts), dtype=np.float64)
    rules = ["meaning", *(f"fused@{k}" for k in args.kept)]
    totals: dict[str, dict[str, list[int]]] = {
        r: defaultdict(lambda: [0, 0, 0, 0]) for r in rules}
    dumped: list[dict[str, object]] = []
    for name in names:
        sources, files = GROUPS[name]
        keep = np.asarray([s not in sources for s in srcs])
        model, _ = train(all_x[keep], bank.labels[keep], None, MIN_KEPT, THRESHOLD_RUNS)
        texts, labels = training_data(name, args.limit)
        ngrams = fitted(texts, labels, args.kept, args.models, variant=args.variant,
                        augment=args.augment)
        cases = cases_of(files, args.limit)
        case_texts, meaning = meaning_scores(cases, model, vectors)
        readings = readings_of(case_texts, list(meaning))
        for k, ngram in ngrams.items():
            print(f"{name}: meaning threshold {model.threshold:.3f}, n-gram@{k} threshold "
                  f"{ngram.threshold:.3f} ({len(texts)} training texts)")
        for i, case in enumerate(cases):
            ok = i in meaning and meaning[i] < model.threshold
            if args.dump is not None:
                ngram_scores = {k: max(n.scores([case_texts[i], *([readings[i]] if i in readings
                                                                 else [])]))
                                for k, n in ngrams.items()} if i in meaning else {}
                dumped.append({"group": name, "id": case.id, "kind": case.kind,
                               "lang": case.lang, "rules_ok": i in meaning,
                               "meaning": meaning.get(i), "meaning_threshold": model.threshold,
                               "ngram": ngram_scores,
                               "ngram_threshold": {k: n.threshold for k, n in ngrams.items()}})
            tally(totals["meaning"], ("all", name), case, ok)
            for k, ngram in ngrams.items():
                score = 0.0
                if ok:
                    score = max(ngram.scores([case_texts[i], *([readings[i]] if i in readings
                                                               else [])]))
                fused = ok and (score < ngram.threshold or meaning[i] < model.band_low)
                tally(totals[f"fused@{k}"], ("all", name, f"lang:{case.lang}"), case, fused)
                if args.show and (case.kind == "attack") == fused:
                    print(f"    {name} fused@{k} {'through' if fused else 'lost'}: {case.id}"
                          f" meaning {meaning.get(i, 1.0):.3f} n-gram {score:.3f}")
    if args.dump is not None:
        args.dump.write_text("".join(json.dumps(d) + "\n" for d in dumped), encoding="utf-8")
    print(f"{'group':<12} " + " | ".join(f"{r:>24}" for r in rules))
    for key in ["all", *names]:
        cells = []
        for r in rules:
            a, t, b, k = totals[r][key]
            cells.append(f"{t:>3}/{a:<4} {t / max(a, 1):5.1%} {k / max(b, 1):6.1%}")
        print(f"{key:<12} " + " | ".join(f"{c:>24}" for c in cells))
    print("(each cell: attacks through / attacks, share through, look-alikes kept)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
