#!/usr/bin/env python3
"""Write bench/implicit_dev4_suite.json: a fourth *development* set of implicit recall (issue 31,
eighth round) — the third set's users with about half the memories.

What the blind sets still show after the seventh round is the top of a *small* user's list:
a user of ~30 memories has them all within 500 tokens in a memory-only answer, and ``fused``
spends some of those tokens on turns first. The development sets do not show it — the first
two are met at 100% within 500 tokens, and the third's users (55–75 memories, 600–800 tokens)
pass 500 tokens in a memory-only answer too. This set is the third one's six users, languages,
confidences and remarks (bench/implicit_dev3_data.py) with an observation for one in eight of
the everyday turns instead of one in three or four (~29 memories a user, ~300–400 tokens), and
other placements of the confidences (another seed): the small-user case, written before any
tuning of the eighth round.

A development set: tuned on, never a held-out figure. Deterministic.

Run: python -m bench.implicit_dev4_data   then
     eros eval --suite bench/implicit_dev4_suite.json --extractor observations
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from bench.implicit_dev3_data import suite

OUT = Path(__file__).resolve().parent / "implicit_dev4_suite.json"
#: one everyday turn in this many has an observation (the third set: 3 or 4)
EVERY = 8
SEED = 3108


def build() -> dict[str, Any]:
    return suite("eros-implicit-dev4-v1", random.Random(SEED), lambda u: EVERY, ids="4",
                 wrap_shift=1)

if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
