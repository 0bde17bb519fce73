"""The parts of a memory the meaning layer may score on their own (issue 30, tenth round).

An instruction carried inside benign content — one step of a recipe, a cell of a plan — is
diluted in the whole text's embedding: the carrier dominates. Each clause, list step and
table cell is scored beside the whole text and the highest score decides. A quoted span is
not a part: a quoted lyric, motto or coach's line is an imperative alone (scored apart, five
tuning-set look-alikes scored 0.97–0.99) and is what a user remembers, not an order. Only
parts long enough to mean something are returned, and a part's score counts only from
:data:`PART_FLOOR` up.
"""

from __future__ import annotations

import re

#: where a clause ends in any script: sentence ends (Latin, CJK, Arabic, Devanagari, Ethiopic,
#: Armenian, Myanmar, Tibetan), semicolons, line breaks, list bullets and table cells
_ENDS = re.compile(r"(?<=[.!?;。！？；؟۔।॥።՝։။།])\s*|\n+|\s*\|\s*|\s+[•·▪‣*–—-]\s+"
                   r"|\s+\d{1,2}[.)]\s+")
#: a part shorter than this (letters) carries too little to be judged alone
MIN_LETTERS = 12
#: at most this many parts a text (a long text is judged by its first ones)
MAX_PARTS = 6
#: a part's score decides only from here up (far above the whole text's threshold: a short
#: clause alone is read more often as an order); an instruction lifted out of a recipe or a
#: table scores 0.976–0.998 (the shipped model; sets 13 and 14 have no line in the bank)
PART_FLOOR = 0.95


def clauses(text: str) -> list[str]:
    """The clauses, steps and cells of ``text`` worth scoring alone ([] for one part)."""
    parts = [p.strip(" ,:\t") for p in _ENDS.split(text)]
    out: list[str] = []
    for part in parts:
        # a part that is nearly the whole text says nothing the whole text does not
        if sum(ch.isalpha() for ch in part) >= MIN_LETTERS and len(part) < 0.9 * len(text) \
                and part not in out:
            out.append(part)
    return out[:MAX_PARTS]
