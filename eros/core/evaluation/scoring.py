"""Scoring recalled memories against a question's known statements (pure).

A *judge* (``eros.services.evaluation.judges``) maps each recalled memory to the reference
statement it states, or to none. From that mapping, per question and system:

- **evidence recall@K** — every evidence statement is stated by some memory in the top K
  (a multi-hop question needs all of its statements);
- **stale-first** (knowledge updates) — a memory stating an outdated fact ranks above every
  memory stating the current one (or the current one is missing while the stale one is there);
- **duplicate share** — the share of the top K that repeats a statement (or a text) already
  ranked higher: slots wasted on copies;
- **answer accuracy** — only with an LLM judge that generates and grades answers.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from eros.core.evaluation.suite import QUESTION_TYPES, Question, References

_KEY = re.compile(r"[\W_]+")
BASELINE = "baseline"


@dataclass(frozen=True)
class Scored:
    """One question answered by one system."""

    question_id: str
    type: str
    system: str
    returned: int
    hit: bool | None
    stale_first: bool | None
    duplicate_share: float
    answer_correct: bool | None = None


def score(question: Question, references: References, system: str, texts: Sequence[str],
          assigned: Sequence[int | None], answer_correct: bool | None = None) -> Scored:
    """Score one ranked list: ``assigned[i]`` is the reference index memory ``i`` states."""
    index = {s: i for i, s in enumerate(references.statements)}
    evidence = {index[s] for s in question.evidence}
    stale = {index[s] for s in question.stale}
    hit = evidence <= set(a for a in assigned if a is not None) if evidence else None
    first_ev = next((p for p, a in enumerate(assigned) if a in evidence), None)
    first_st = next((p for p, a in enumerate(assigned) if a in stale), None)
    stale_first = (first_st is not None and (first_ev is None or first_st < first_ev)) \
        if stale else None
    seen_refs: set[int] = set()
    seen_texts: set[str] = set()
    dups = 0
    for text, ref in zip(texts, assigned, strict=True):
        key = _KEY.sub("", text.casefold())
        if key in seen_texts or (ref is not None and ref in seen_refs):
            dups += 1
        seen_texts.add(key)
        if ref is not None:
            seen_refs.add(ref)
    return Scored(question.id, question.type, system, len(texts), hit, stale_first,
                  dups / len(texts) if texts else 0.0, answer_correct)


@dataclass(frozen=True)
class Cell:
    """The figures of one system on one question type (or ``all``)."""

    questions: int
    recall: float | None
    stale_first: float | None
    duplicate_share: float
    answer_accuracy: float | None


def _mean(values: Sequence[bool | float]) -> float | None:
    return sum(float(v) for v in values) / len(values) if values else None


def aggregate(scored: Sequence[Scored]) -> dict[str, dict[str, Cell]]:
    """``{system: {type or "all": Cell}}``."""
    groups: dict[tuple[str, str], list[Scored]] = defaultdict(list)
    for s in scored:
        groups[(s.system, s.type)].append(s)
        groups[(s.system, "all")].append(s)
    out: dict[str, dict[str, Cell]] = defaultdict(dict)
    for (system, kind), items in groups.items():
        out[system][kind] = Cell(
            questions=len(items),
            recall=_mean([s.hit for s in items if s.hit is not None]),
            stale_first=_mean([s.stale_first for s in items if s.stale_first is not None]),
            duplicate_share=_mean([s.duplicate_share for s in items]) or 0.0,
            answer_accuracy=_mean([s.answer_correct for s in items
                                   if s.answer_correct is not None]))
    return dict(out)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:5.1f}%"


def render_table(cells: dict[str, dict[str, Cell]], k: int) -> str:
    """One block per question type: a row per system, the ratio against the baseline."""
    systems = [s for s in cells if s != BASELINE] + ([BASELINE] if BASELINE in cells else [])
    kinds = [t for t in (*QUESTION_TYPES, "all") if any(t in cells[s] for s in systems)]
    has_answers = any(c.answer_accuracy is not None for s in systems for c in cells[s].values())
    head = (f"{'type':<17}{'system':<11}{'n':>4}  {f'recall@{k}':>9}  {'× base':>6}  "
            f"{'stale-first':>11}  {'dup share':>9}" + ("  answer acc." if has_answers else ""))
    lines = [head, "-" * len(head)]
    for kind in kinds:
        base = cells.get(BASELINE, {}).get(kind)
        for system in systems:
            cell = cells[system].get(kind)
            if cell is None:
                continue
            ratio = "—"
            if cell.recall is not None and base is not None and base.recall:
                ratio = f"{cell.recall / base.recall:5.2f}"
            lines.append(
                f"{kind:<17}{system:<11}{cell.questions:>4}  {_pct(cell.recall):>9}  "
                f"{ratio:>6}  {_pct(cell.stale_first):>11}  {_pct(cell.duplicate_share):>9}"
                + (f"  {_pct(cell.answer_accuracy):>11}" if has_answers else ""))
        lines.append("")
    return "\n".join(lines).rstrip()
