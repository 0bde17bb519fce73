"""The memory guard's decision on the red-team corpora without a database (issue 30 item 4).

What the classify path decides for each case's memory — the candidate validated as the pipeline
does, the rules and secret checks, then the shipped e5 meaning model at its threshold — in about
a minute instead of the poisoning bench's hour of sessions, so the guard can be tuned on the
TUNING sets: the main corpus, the retired held-out sets 1–3, the development sets
(``tests/redteam/dev5.toml``, ``dev6.toml``) and the spent held-out sets 5 and 6 (from issue
30's third round), 7 (from its fourth round), 8 (from its fifth), 9 (after its fifth), 10
(the independent set written after the fifth round, spent in its sixth), 11 (the independent
set written while the sixth round was tuned, spent in its seventh), 12 (the independent set
written while the seventh round was tuned, spent in its eighth), 13 (the independent set
written while the eighth round was tuned, spent in its ninth), 14 (the independent set
written while the ninth round was tuned, spent in its tenth) and 15 (the independent set
written while the tenth round was tuned, spent in its eleventh) and 16 (the independent set
written while the eleventh round was tuned, spent in its thirteenth), 18 (the independent
set written while the thirteenth round was tuned, spent in its fourteenth), 19 (the
independent set written while the fourteenth round was tuned, spent in its fifteenth), 20
(the independent set written while the fifteenth round was tuned, spent in its seventeenth),
21 (the independent set written while the seventeenth round was tuned, spent in its
eighteenth) and 22 (the independent set written while the eighteenth round was tuned, spent
in its nineteenth; each was reported as held out before it was tuned on). The sets still held
out — 4, 17 (the independent set written while the twelfth round was tuned) and 23 (written
while the nineteenth was tuned) — are left out
unless ``--held-out`` is given: that flag is for reporting final figures, never for tuning
(bench/RESULTS.md says which runs used it), and it prints no held-out case.
``bench/guard_loso.py`` gives the leave-one-set-out estimate on the tuning sets;
``bench/poisoning_bench.py`` stays the reference measurement (the whole pipeline, consolidation
and rendering included).

    python -m bench.guard_dev [--held-out] [--show-dev] [--limit N]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Sequence

from bench.poisoning_detail import sample_turns
from eros.guard.core.guard import Guard, load_guard
from eros.guard.core.guard_meaning import MeaningModel, load_bank, load_shipped
from eros.guard.services.guard_model import (
    candidate_text,
    ngram_drops,
    parts_of,
    readings_of,
    worst_scores,
)
from testkit.redteam.corpus import HELDOUT, Case, load

#: the sets the guard may be tuned on: the main corpus, the released held-out sets, the
#: development sets of issue 30 (dev-6: its second round) and the spent held-out sets 5 and 6
#: (since its third round), 7 (since its fourth), 8 (since its fifth), 9 (after its fifth), 10
#: (spent in its sixth), 11 (spent in its seventh), 12 (spent in its eighth), 13 (spent in its
#: ninth), 14 (spent in its tenth), 15 (spent in its eleventh), 16 (spent in its thirteenth),
#: 18 (spent in its fourteenth), 19 (spent in its fifteenth), 20 (spent in its seventeenth),
#: 21 (spent in its eighteenth) and 22 (spent in its nineteenth; each was reported as held out
#: first)
TUNING = {"main": ["attacks.toml", "benign.toml"], "held-out-1": ["heldout.toml"],
          "held-out-2": ["heldout2.toml"], "held-out-3": ["heldout3.toml"],
          "dev-5": ["dev5.toml"], "dev-6": ["dev6.toml"],
          "tuned-5": [HELDOUT["held-out-5"]], "tuned-6": [HELDOUT["held-out-6"]],
          "tuned-7": [HELDOUT["held-out-7"]], "tuned-8": [HELDOUT["held-out-8"]],
          "tuned-9": [HELDOUT["held-out-9"]], "tuned-10": [HELDOUT["held-out-10"]],
          "tuned-11": [HELDOUT["held-out-11"]], "tuned-12": [HELDOUT["held-out-12"]],
          "tuned-13": [HELDOUT["held-out-13"]], "tuned-14": [HELDOUT["held-out-14"]],
          "tuned-15": [HELDOUT["held-out-15"]], "tuned-16": [HELDOUT["held-out-16"]],
          "tuned-18": [HELDOUT["held-out-18"]], "tuned-19": [HELDOUT["held-out-19"]],
          "tuned-20": [HELDOUT["held-out-20"]], "tuned-21": [HELDOUT["held-out-21"]],
          "tuned-22": [HELDOUT["held-out-22"]]}
#: still held out: reported with --held-out only (set 4, issue 25; a newer independent set is
#: added here, newest first, when it is registered)
HELD = {"held-out-23": [HELDOUT["held-out-23"]], "held-out-17": [HELDOUT["held-out-17"]],
        "held-out-4": [HELDOUT["held-out-4"]]}


def cases_of(files: Sequence[str], limit: int | None = None) -> list[Case]:
    """The cases of a set (the first ``limit`` attacks and ``limit`` look-alikes with one)."""
    out: list[Case] = []
    for name in files:
        kind = {"attacks.toml": "attack", "benign.toml": "benign"}.get(name)
        out.extend(load(name, kind))  # type: ignore[arg-type]
    if limit is None:
        return out
    return ([c for c in out if c.kind == "attack"][:limit]
            + [c for c in out if c.kind == "benign"][:limit])


def _model() -> MeaningModel:
    from eros.providers.offline.e5 import E5_MODEL_NAME

    model = load_shipped(E5_MODEL_NAME, load_bank().digest)
    if model is None:
        raise SystemExit("no shipped e5 model for this bank: run scripts/ship_guard_model.py")
    return model


def verdict_layers(texts: Sequence[str], model: MeaningModel,
                   guard: Guard | None = None, memories: bool = True) -> list[str]:
    """For each text, the layer that drops it (``rules``, ``secrets``, ``meaning``, ``ngram``,
    ``parse`` for an empty one) or ``""`` when it is kept: rules and secrets, then the meaning
    model on the text's, its reading's and (``memories``: not user turns) its clauses' e5
    vectors, then (``memories``) the shipped n-gram classifier on the meaning layer's uncertain
    band, as the classify path judges."""
    from eros.providers.offline.e5 import E5_DIM, E5Embedder

    guard = guard or load_guard()
    verdicts = [guard.check(t) for t in texts]
    survivors = [i for i, v in enumerate(verdicts) if v.ok and texts[i]]
    readings = readings_of(texts, survivors)  # scored beside the text, as screen_texts does
    parts = parts_of(texts, survivors) if memories else []
    vectors = E5Embedder(E5_DIM).embed([texts[i] for i in survivors] + list(readings.values())
                                       + [p for _, p in parts],
                                       input_type="document").vectors if survivors else []
    end = len(survivors) + len(readings)
    read: dict[int, Sequence[float]] = dict(zip(readings, vectors[len(survivors):end],
                                                strict=True))
    scored = list(zip((i for i, _ in parts), vectors[end:], strict=True))
    scores = dict(zip(survivors, worst_scores(model, vectors[: len(survivors)], survivors, read,
                                              scored), strict=True))
    band = [i for i in survivors if model.band_low <= scores[i] < model.threshold]
    ngram = set(ngram_drops(texts, band, readings)) if memories else set()
    out = []
    for i, text in enumerate(texts):
        if not verdicts[i].ok:
            out.append(verdicts[i].layer or "rules")
        elif i in scores and scores[i] >= model.threshold:
            out.append("meaning")
        elif i in ngram:
            out.append("ngram")
        else:
            out.append("" if text else "parse")
    return out


def decide(cases: Sequence[Case], model: MeaningModel) -> list[tuple[Case, bool, str]]:
    """(case, kept, layer that dropped it or ``""``) for each case's memory."""
    layers = verdict_layers([candidate_text(c.memory) or "" for c in cases], model)
    return [(case, not layer, layer) for case, layer in zip(cases, layers, strict=True)]


def sample_drops(model: MeaningModel) -> tuple[int, dict[str, int]]:
    """(user turns, dropped by layer) over the bundled sample corpus (eros/data): ordinary
    chat nobody wrote as a look-alike, each turn judged by the whole guard as if stored
    verbatim, length cap off (bench/poisoning_detail.py judges them the same way with a
    database); none may be dropped."""
    turns = sample_turns()
    layers = verdict_layers(turns, model, load_guard(max_chars=10000))
    dropped: dict[str, int] = defaultdict(int)
    for layer in layers:
        if layer:
            dropped[layer] += 1
    return len(turns), dict(dropped)


def cost(cases: Sequence[Case], model: MeaningModel,
         rounds: int = 5) -> tuple[float, float, float]:
    """CPU per candidate in ms (process time, median of ``rounds``): rules and secrets over
    every memory; the meaning layer's reading and clauses of every memory plus the scoring of
    one vector at a time (a reading that differs and each clause add their own scoring), as
    bench/poisoning_detail does (the clauses' embedding is the embedder's, not counted); the
    n-gram classifier on every memory and its reading."""
    import time

    from eros.providers.offline.e5 import E5_DIM, E5Embedder

    guard = load_guard()
    texts = [candidate_text(c.memory) or "" for c in cases]
    vectors = E5Embedder(E5_DIM).embed(texts[:32], input_type="document").vectors
    rules, meaning, ngram = [], [], []
    every = range(len(texts))
    for _ in range(rounds):
        start = time.process_time()
        for t in texts:
            guard.check(t)
        rules.append((time.process_time() - start) * 1000 / len(texts))
        start = time.process_time()
        read = readings_of(texts, range(len(texts)))
        parts = parts_of(texts, range(len(texts)))
        reading_ms = (time.process_time() - start) * 1000 / len(texts)
        start = time.process_time()
        for v in vectors:
            model.scores([v])
        per = (time.process_time() - start) * 1000 / len(vectors)
        meaning.append(reading_ms + per * (1 + (len(read) + len(parts)) / len(texts)))
        start = time.process_time()
        ngram_drops(texts, every, read)
        ngram.append((time.process_time() - start) * 1000 / len(texts))
    return sorted(rules)[rounds // 2], sorted(meaning)[rounds // 2], sorted(ngram)[rounds // 2]


def tally(rows: dict[str, list[int]], keys: Sequence[str], case: Case, kept: bool) -> None:
    """Count one judged case under each key: [attacks, through, look-alikes, kept]."""
    for key in keys:
        slot = rows[key]
        if case.kind == "attack":
            slot[0] += 1
            slot[1] += kept
        else:
            slot[2] += 1
            slot[3] += kept


def table(name: str, results: Sequence[tuple[Case, bool, str]]) -> list[str]:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for case, kept, _layer in results:
        tally(rows, ("all", f"lang:{case.lang}"), case, kept)
    lines = []
    for key in ["all", *sorted(k for k in rows if k != "all")]:
        a, t, b, k = rows[key]
        through = f"{t / a:6.1%}" if a else "     -"
        keptp = f"{k / b:6.1%}" if b else "     -"
        lines.append(f"{name:<12}{key:<10}{a:>8}{t:>8}{through:>8}{b:>8}{k:>6}{keptp:>8}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.guard_dev", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--held-out", action="store_true",
                        help="also the sets still held out (final figures only, never tuning)")
    parser.add_argument("--show-dev", action="store_true",
                        help="print the tuning sets' misses (never the held-out sets')")
    parser.add_argument("--cost", action="store_true",
                        help="also the guard's CPU per candidate over the tuning sets' memories")
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first N attacks and N look-alikes of each set (smoke)")
    args = parser.parse_args(argv)
    model = _model()
    sets = ({**HELD, **TUNING} if args.held_out else TUNING)
    head = (f"{'corpus':<12}{'':<10}{'attacks':>8}{'through':>8}{'ASR':>8}{'benign':>8}"
            f"{'kept':>6}{'kept %':>8}")
    print(f"meaning model threshold {model.threshold:.3f}, bank balanced accuracy out of fold "
          f"{model.balanced_accuracy:.3f}, bank {load_bank().digest}")
    print(head + "\n" + "-" * len(head))
    for name, files in sets.items():
        results = decide(cases_of(files, args.limit), model)
        for line in table(name, results):
            print(line)
        if args.show_dev and name in TUNING:
            for case, kept, layer in results:
                if (case.kind == "attack") == kept:
                    print(f"    {'through' if kept else 'lost by ' + layer}: {case.id}")
    if args.limit is None:
        turns, dropped = sample_drops(model)
        print(f"sample corpus: {sum(dropped.values())} of {turns} ordinary user turns dropped "
              f"{dict(sorted(dropped.items()))}")
    if args.cost:
        cases = [c for files in TUNING.values() for c in cases_of(files, args.limit)]
        rules_ms, meaning_ms, ngram_ms = cost(cases, model)
        print(f"guard CPU per candidate over {len(cases)} tuning-set memories (process time, "
              f"median of 5 rounds): rules+secrets {rules_ms:.3f} ms, meaning layer (reading "
              f"and scoring) {meaning_ms:.3f} ms, n-gram {ngram_ms:.3f} ms, total "
              f"{rules_ms + meaning_ms + ngram_ms:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
