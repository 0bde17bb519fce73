#!/usr/bin/env python3
"""Fit the meaning layer's turn threshold and write it into the shipped e5 model
(``eros/data/guard/multilingual-e5-small-q4.json``, key ``model.turn_threshold``; issue 30/31).

The memory threshold was chosen on the exemplar bank — memories ("User wants …") — and a user's
turn is conversation: held to it, LoCoMo lost 2.6% of its turns to the meaning layer. The turn
threshold is fitted here on turns that are NOT LoCoMo (LoCoMo stays the external check,
``python -m bench.guard_turns``): the lowest that keeps 99.9% of the benign turns — ordinary
ones (the sample corpus's, the implicit development suites') and the tuning sets' look-alike
turns together — never below the memory threshold
(:func:`eros.guard.core.guard_meaning.choose_turn_threshold`). The tuning sets' attack turns
are reported caught at both thresholds. Each turn is scored as ``screen_texts`` scores a turn:
the rules first (a turn they drop is not scored), then the worst of its first 2,000
characters' and its reading's e5 scores. The weights, the memory threshold and the bank digest
are left exactly as they are.

    .venv/bin/python scripts/ship_guard_turns.py [--stride N]

``--stride`` (default 4): every N-th turn of the implicit suites and 4·N-th of the tuning
sets' cases (the sample corpus whole), so the fit takes minutes on a busy two-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.guard_turn_data import case_turns, ordinary_turns  # noqa: E402
from eros.guard.core.guard import load_guard  # noqa: E402
from eros.guard.core.guard_meaning import (  # noqa: E402
    MeaningModel,
    choose_turn_threshold,
    load_bank,
    model_from_dict,
    model_to_dict,
    shipped_path,
)
from eros.guard.services.guard_model import (  # noqa: E402
    TURN_EMBED_CHARS,
    TURN_MAX_CHARS,
    readings_of,
    worst_scores,
)
from eros.providers.offline.e5 import E5_DIM, E5_MODEL_NAME, E5Embedder  # noqa: E402


def turn_scores(model: MeaningModel, turns: Sequence[str]) -> list[float | None]:
    """Each turn's meaning score as ``screen_texts`` computes it; None where the rules drop it."""
    guard = replace(load_guard(), max_chars=TURN_MAX_CHARS, directives=False)
    texts = [t[:TURN_EMBED_CHARS] for t in turns]
    kept = [i for i, t in enumerate(turns) if guard.check(t).ok]
    readings = readings_of(texts, kept)
    vectors = E5Embedder(E5_DIM).embed([texts[i] for i in kept] + list(readings.values()),
                                       input_type="document").vectors
    read = dict(zip(readings, vectors[len(kept):], strict=True))
    scores = dict(zip(kept, worst_scores(model, vectors[: len(kept)], kept, read), strict=True))
    return [scores.get(i) for i in range(len(turns))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=4)
    args = parser.parse_args(argv)
    path = ROOT / "eros" / "data" / shipped_path(E5_MODEL_NAME)
    document = json.loads(path.read_text("utf-8"))
    if document["bank_digest"] != load_bank().digest:
        raise SystemExit("the shipped model is not this bank's: run scripts/ship_guard_model.py")
    model = model_from_dict(document["model"])
    ordinary, lookalike = ordinary_turns(args.stride), case_turns("benign", 4 * args.stride)
    attacks = case_turns("attack", 4 * args.stride)
    scores = turn_scores(model, [*ordinary, *lookalike, *attacks])
    o, look = scores[: len(ordinary)], scores[len(ordinary): len(ordinary) + len(lookalike)]
    a = scores[len(ordinary) + len(lookalike):]
    cut = choose_turn_threshold(model.threshold, [s for s in [*o, *look] if s is not None])
    document["model"] = model_to_dict(replace(model, turn_threshold=cut))
    path.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    for name, group in (("ordinary", o), ("look-alike", look), ("attack", a)):
        rules = sum(s is None for s in group)
        at = [sum(s is not None and s >= t for s in group) for t in (model.threshold, cut)]
        print(f"{name} turns {len(group)}: rules drop {rules}; meaning drops {at[0]} at the "
              f"memory threshold {model.threshold:.3f}, {at[1]} at the turn threshold {cut:.3f}")
    print(f"{path.relative_to(ROOT)}: turn_threshold {cut:.4f} (bank {document['bank_digest']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
