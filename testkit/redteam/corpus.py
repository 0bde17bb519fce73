"""The red-team corpus (issue 15): attacks, benign look-alikes and a held-out set, as data.

The data files stay with the tests that own them, in ``tests/redteam/*.toml``; this loader is
here so the benchmarks (bench/poisoning_bench.py, bench/guard_dev.py) read them without
importing a test module.

``attacks.toml`` and ``benign.toml`` are the main corpus. The held-out sets are written after
a round of patterns and never used to tune that round (their figures are reported as
measured): ``heldout.toml`` after round 1, ``heldout2.toml`` after round 2 (tuned on set 1),
``heldout3.toml`` after round 3 (tuned on sets 1 and 2), ``heldout4.toml`` (issue 25) before
any change of issue 25, in 14 languages; ``heldout5.toml`` (issue 30) before any change of issue
30, more benign look-alikes than attacks, in 20 languages; ``heldout6.toml`` (issue 30, second
round) before that round's changes, in 23 languages; ``heldout7.toml`` (issue 30, third round)
before that round's changes, in 30 languages; ``heldout8.toml`` (issue 30, fourth round) before
that round's changes, in 31 languages; ``heldout9.toml`` (issue 30, fifth round) before that
round's changes, in 33 languages; ``heldout10.toml`` (issue 30) after the fifth round and before
any later change, by a writer who had not seen the bank, the rules or any other held-out set
(the independent check of the fifth round: set 9 was known to the writer of that round's bank
lines), in 43 languages; ``heldout11.toml`` (issue 30) while the sixth round was tuned, by a
writer who had seen neither the bank, the rules nor any other held-out set, in 51 languages;
``heldout12.toml`` (issue 30) while the seventh round was tuned, by a writer who had seen none
of the project but its own file, in 67 languages; ``heldout13.toml`` (issue 30) while the
eighth round was tuned, by a writer who had seen none of the project but its own file, in 80
languages; ``heldout14.toml`` (issue 30) the same way while the ninth round was tuned, in 75
languages; ``heldout15.toml`` (issue 30) the same way while the tenth round was tuned, in 67
languages; ``heldout16.toml`` (issue 30) the same way while the eleventh round was tuned, in 81
languages.
``heldout17.toml`` (issue 30) the same way while the twelfth round was tuned, in 99 languages;
``heldout18.toml`` (issue 30) the same way while the thirteenth round was tuned, in 91 languages;
``heldout19.toml`` (issue 30) the same way while the fourteenth round was tuned, in 90 languages;
``heldout20.toml`` (issue 30) the same way while the fifteenth round was tuned, in 90 languages;
``heldout21.toml`` (issue 30) the same way while the seventeenth round was tuned, in 78 languages;
``heldout22.toml`` (issue 30) the same way while the eighteenth round was tuned, in 86 languages.
Sets 4 and 17 are held out (never tuned on); sets 5 and 6 became tuning sets in the third
round, set 7 in the fourth, set 8 in the fifth, set 9 after the fifth, set 10 in the sixth, set
11 in the seventh, set 12 in the eighth, set 13 in the ninth, set 14 in the tenth, set 15 in the
eleventh, set 16 in the thirteenth, set 18 in the fourteenth, set 19 in the fifteenth, set 20
in the seventeenth, set 21 in the eighteenth, set 22 in the nineteenth (bench/RESULTS.md).
Each case is a session and the single memory a COMPLYING model returns for it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

#: where the corpus files are (read as data: testkit imports no test module)
CORPUS_DIR = Path(__file__).resolve().parents[2] / "tests" / "redteam"
Kind = Literal["attack", "benign"]


@dataclass(frozen=True)
class Case:
    id: str
    kind: Kind
    lang: str
    turns: tuple[tuple[str, str], ...]
    memory: str
    category: str = "preference"
    tags: tuple[str, ...] = ()


def load(name: str, kind: Kind | None = None) -> list[Case]:
    """The cases of one corpus file; ``kind`` for files of one kind, else each case's own."""
    document = tomllib.loads((CORPUS_DIR / name).read_text(encoding="utf-8"))
    cases = []
    for item in document["case"]:
        cases.append(Case(
            id=item["id"], kind=item.get("kind", kind), lang=item["lang"],
            turns=tuple((role, text) for role, text in item["turns"]), memory=item["memory"],
            category=item.get("category", "fact" if kind == "benign" else "preference"),
            tags=tuple(item.get("tags", ()))))
    return cases


def main_corpus() -> list[Case]:
    return load("attacks.toml", "attack") + load("benign.toml", "benign")


#: held-out sets by name, oldest first; sets 4 and 17 are still held out (never tuned on), the
#: others are spent (tuning sets, bench/guard_dev.py).
HELDOUT = {"held-out-1": "heldout.toml", "held-out-2": "heldout2.toml",
           "held-out-3": "heldout3.toml", "held-out-4": "heldout4.toml",
           "held-out-5": "heldout5.toml", "held-out-6": "heldout6.toml",
           "held-out-7": "heldout7.toml", "held-out-8": "heldout8.toml",
           "held-out-9": "heldout9.toml", "held-out-10": "heldout10.toml",
           "held-out-11": "heldout11.toml", "held-out-12": "heldout12.toml",
           "held-out-13": "heldout13.toml", "held-out-14": "heldout14.toml",
           "held-out-15": "heldout15.toml", "held-out-16": "heldout16.toml",
           "held-out-17": "heldout17.toml", "held-out-18": "heldout18.toml",
           "held-out-19": "heldout19.toml", "held-out-20": "heldout20.toml",
           "held-out-21": "heldout21.toml", "held-out-22": "heldout22.toml",
           "held-out-23": "heldout23.toml"}


def heldout_corpus(name: str | None = None) -> list[Case]:
    """The cases of held-out set ``name`` (the newest registered when none is named)."""
    return load(HELDOUT[name or list(HELDOUT)[-1]])
