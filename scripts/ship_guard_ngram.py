#!/usr/bin/env python3
"""Write the memory guard's character n-gram model (``eros/data/guard/ngram.json``; issue 30,
twelfth round), so no worker or task ever fits it: the model is read from the package.

Trained on the exemplar bank and the tuning sets' labelled memories (``tests/redteam``, the
held-out sets excluded: ``bench.guard_ngram_loso.training_data``); its threshold keeps 99.5%
of those look-alikes out of fold. Run after every change of the bank or of a tuning set
(``tests/unit/test_guard_ngram.py`` fails until the shipped digest matches):
``.venv/bin/python scripts/ship_guard_ngram.py`` (about 30 s on two cores, no embedder).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.guard_ngram_loso import training_data  # noqa: E402
from eros.guard.core.guard_ngram import model_to_json, train_ngram  # noqa: E402


def main() -> int:
    started = time.monotonic()
    texts, labels = training_data()
    model = train_ngram(texts, labels)
    out = ROOT / "eros" / "data" / "guard" / "ngram.json"
    out.write_text(model_to_json(model), encoding="utf-8")
    print(f"{out.relative_to(ROOT)}: {len(texts)} texts ({sum(labels)} instructions), digest "
          f"{model.digest}, threshold {model.threshold:.3f}, "
          f"{time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
