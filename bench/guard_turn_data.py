"""The user turns the meaning layer's turn threshold is fitted and checked on (issue 30/31):
never LoCoMo, which stays the external check (``python -m bench.guard_turns``).

- ordinary turns: the bundled sample corpus's user turns (eros/data) and the implicit
  development suites' user turns (bench/implicit_suite.json, implicit_dev3, implicit_dev4) —
  conversation nobody wrote to look like an order;
- look-alike turns: the user turns of the tuning sets' benign cases (ordinary life that sounds
  like an instruction);
- attack turns: the user turns of the tuning sets' attacks.

``stride`` keeps every n-th turn of each source (in file order), so a fit on a busy two-core
machine takes minutes, not half an hour; the held-out sets are never read (only
:data:`bench.guard_dev.TUNING`).
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.guard_dev import TUNING, cases_of

ROOT = Path(__file__).resolve().parent.parent
SUITES = ("implicit_suite.json", "implicit_dev3_suite.json", "implicit_dev4_suite.json")


def sample_corpus_turns() -> list[str]:
    """The user turns of the bundled sample corpus."""
    out: list[str] = []
    for line in (ROOT / "eros" / "data" / "sample_corpus.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            out += [m["content"] for m in json.loads(line)["messages"]
                    if m["role"] == "user" and m["content"]]
    return out


def suite_turns(name: str) -> list[str]:
    """The user turns of one implicit development suite (bench/)."""
    suite = json.loads((ROOT / "bench" / name).read_text("utf-8"))
    return [t["content"] for u in suite["users"] for s in u["sessions"] for t in s["turns"]
            if t["role"] == "user" and t["content"]]


def ordinary_turns(stride: int = 1) -> list[str]:
    """Ordinary conversation: the sample corpus (all of it) and every ``stride``-th turn of the
    implicit development suites."""
    return sample_corpus_turns() + [t for name in SUITES for t in suite_turns(name)[::stride]]


def case_turns(kind: str, stride: int = 1) -> list[str]:
    """Every ``stride``-th user turn of the tuning sets' cases of ``kind`` (``attack`` or
    ``benign``)."""
    out: list[str] = []
    for files in TUNING.values():
        out += [text for case in cases_of(files) if (case.kind == "attack") == (kind == "attack")
                for role, text in case.turns if role == "user" and text]
    return out[::stride]
