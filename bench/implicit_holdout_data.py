#!/usr/bin/env python3
"""Write bench/implicit_holdout_suite.json: a third, HELD-OUT check of implicit recall (issue 31).

Written and committed before any of the fusion calibration it judges was designed or tuned,
and never tuned on (ENGINEERING.md). The two earlier sets (``implicit_data.py``) are the
calibration's *development* sets from that commit on; this one only reports.

Modelled on the issue's hidden set ("a later remark that only meaning links to something the
user confided months before", where memories find the evidence far more often than raw
turns), and deliberately unlike the earlier sets in everything a tuner could latch onto:

- six other users, other confidences, other remarks, **four languages** (two English, one
  German, one French, one Spanish user; the observations are written in the user's language,
  as an extractor writes them), another seed (2031), another calendar (36 sessions, five days
  apart, nine user turns each: 324 turns a user);
- the confidence is **buried** inside a long turn between two everyday sentences, so the raw
  turn is a diluted key, while the memory written from it is a clean fact;
- the later remark shares its **surface topic** with everyday turns said after the
  confidence (two per remark: "the office party was fun" beside "wore my loosest jumper to
  the office party"), each with a mundane observation — so a search over raw turns, and a
  memory ranking too, meets look-alikes that are not the evidence;
- the remark names nothing the confidence says (no shared names or key words).

The words are in ``implicit_holdout_text.py``; this module lays them out. Every confidence
carries the observation an extractor would write (``--extractor observations``), citing its
turn, so the evidence is scored exactly by provenance; a third of the everyday turns carry
mundane observations too. 30 questions, deterministic.

Run: python -m bench.implicit_holdout_data   then
     eros eval --suite bench/implicit_holdout_suite.json --extractor observations
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.implicit_holdout_text import EVERYDAY, REPLIES, USERS

NS = uuid.UUID("5b0d6f0e-2c1e-4f7a-9d35-7a0e4c3b9f11")
OUT = Path(__file__).resolve().parent / "implicit_holdout_suite.json"
START = datetime(2024, 9, 2, 20, 0, tzinfo=UTC)
SESSIONS = 36
TURNS_PER_SESSION = 9
GAP_DAYS = 5
#: the confidences fall in the first quarter of the sessions
EARLY = 9

def _id(*parts: object) -> str:
    return str(uuid.uuid5(NS, "/".join(str(p) for p in parts)))


def everyday(name: str, lang: str, rng: random.Random, n: int) -> list[tuple[str, str | None]]:
    """``n`` distinct everyday turns in ``lang``, a third with a mundane observation."""
    when, did, after = EVERYDAY[lang]
    combos = [(w, d, a) for w in when for d in did for a in after]
    rng.shuffle(combos)
    out: list[tuple[str, str | None]] = []
    for i, (w, (first, third), a) in enumerate(combos[:n]):
        out.append((f"{w} {first} {a}", f"{name} {third}." if i % 3 == 0 else None))
    return out


def build() -> dict[str, Any]:
    rng = random.Random(2031)
    users: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for u, (name, lang, secrets) in enumerate(USERS):
        talk = everyday(name, lang, rng, SESSIONS * TURNS_PER_SESSION + 2 * EARLY * 2)
        fill = iter(talk)
        # the confidences: distinct slots in the first EARLY sessions; their look-alikes
        # (the remark's surface topic) at random slots after the last confidence
        slots = rng.sample([(s, t) for s in range(EARLY) for t in range(TURNS_PER_SESSION)],
                           len(secrets))
        secret_at = {slot: i for i, slot in enumerate(slots)}
        later = [(s, t) for s in range(EARLY + 1, SESSIONS) for t in range(TURNS_PER_SESSION)]
        looks = rng.sample(later, 2 * len(secrets))
        look_at = {slot: (i // 2, i % 2) for i, slot in enumerate(looks)}
        sessions = []
        for s in range(SESSIONS):
            at = START + timedelta(days=GAP_DAYS * s + u, hours=rng.randrange(3))
            turns: list[dict[str, Any]] = []
            observations: list[dict[str, Any]] = []
            for t in range(TURNS_PER_SESSION):
                tid = f"{name}:S{s + 1}:T{t + 1}"
                if (s, t) in secret_at:
                    i = secret_at[(s, t)]
                    text, fact, remark, _ = secrets[i]
                    # buried: an everyday sentence before and after it, in one long turn
                    before, after = next(fill)[0], next(fill)[0]
                    content = f"{before} {text} {after}"
                    observations.append({"text": fact, "turns": [tid]})
                    questions.append({
                        "id": f"{name}-{i + 1}", "user": _id("user", name),
                        "type": "single-hop", "question": remark, "evidence": [fact],
                        "answer": fact, "evidence_turns": [tid]})
                elif (s, t) in look_at:
                    i, j = look_at[(s, t)]
                    content, obs = secrets[i][3][j]
                    if obs:
                        observations.append({"text": obs.format(name=name), "turns": [tid]})
                else:
                    content, obs = next(fill)
                    if obs:
                        observations.append({"text": obs, "turns": [tid]})
                when = at + timedelta(minutes=3 * t)
                turns.append({"role": "user", "content": content, "at": when.isoformat(),
                              "id": tid})
                turns.append({"role": "assistant",
                              "content": REPLIES[lang][(s + t) % len(REPLIES[lang])],
                              "at": (when + timedelta(minutes=1)).isoformat()})
            sessions.append({"id": _id("session", name, s), "turns": turns,
                             "observations": observations})
        users.append({"id": _id("user", name), "name": name, "language": lang,
                      "sessions": sessions})
    expected = {f"{n}-{i + 1}" for n, _, s in USERS for i in range(len(s))}
    if expected != {q["id"] for q in questions}:
        raise SystemExit("confidences not placed")
    return {"name": "eros-implicit-holdout-v1", "users": users, "questions": questions}


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
