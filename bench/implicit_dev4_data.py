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
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.implicit_dev3_data import (
    _WRAP,
    EARLY,
    GAP_DAYS,
    PER_SESSION,
    REPLIES,
    SESSIONS,
    START,
    USERS,
    _id,
    everyday,
)

OUT = Path(__file__).resolve().parent / "implicit_dev4_suite.json"
#: one everyday turn in this many has an observation (the third set: 3 or 4)
EVERY = 8
SEED = 3108


def build() -> dict[str, Any]:
    rng = random.Random(SEED)
    users: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for u, (name, language, secrets) in enumerate(USERS):
        talk = everyday(language, name, rng, SESSIONS * PER_SESSION, EVERY)
        slot: dict[tuple[int, int], int] = {}
        for i, s in enumerate(rng.sample(range(EARLY), len(secrets))):
            slot[(s, rng.randrange(PER_SESSION))] = i
        sessions = []
        nxt = 0
        for s in range(SESSIONS):
            at = START + timedelta(days=GAP_DAYS * s + u, hours=rng.randrange(5))
            turns: list[dict[str, Any]] = []
            observations: list[dict[str, Any]] = []
            for t in range(PER_SESSION):
                tid = f"{name}:S{s + 1}:T{t + 1}"
                secret = slot.get((s, t))
                if secret is not None:
                    text, fact, remark = secrets[secret]
                    wraps = _WRAP[language]
                    content = wraps[(u + secret + 1) % len(wraps)].format(text=text)
                    observations.append({"text": fact, "turns": [tid]})
                    questions.append({
                        "id": f"{name}-{secret + 1}", "user": _id("user4", name),
                        "type": "single-hop", "question": remark, "evidence": [fact],
                        "answer": fact, "evidence_turns": [tid]})
                else:
                    content, obs = talk[nxt]
                    nxt += 1
                    if obs:
                        observations.append({"text": obs, "turns": [tid]})
                when = at + timedelta(minutes=3 * t)
                turns.append({"role": "user", "content": content, "at": when.isoformat(),
                              "id": tid})
                turns.append({"role": "assistant", "content": REPLIES[(s + t) % len(REPLIES)],
                              "at": (when + timedelta(minutes=1)).isoformat()})
            sessions.append({"id": _id("session4", name, s), "turns": turns,
                             "observations": observations})
        users.append({"id": _id("user4", name), "name": name, "language": language,
                      "sessions": sessions})
    missing = {f"{n}-{i + 1}" for n, _, s in USERS for i in range(len(s))} - \
        {q["id"] for q in questions}
    if missing:
        raise SystemExit(f"confidences not placed: {sorted(missing)}")
    return {"name": "eros-implicit-dev4-v1", "users": users, "questions": questions}


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
