"""Scoring recalled memories against a question's known statements (pure).

A *judge* (``eros.evaluation.services.judges``) maps each recalled memory to the expected
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

from eros.evaluation.core.exact import BUDGETS, KS, Coverage, percentile
from eros.evaluation.core.suite import QUESTION_TYPES, Question, References

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
    #: exact scoring by provenance (suites with evidence turn ids): hit per K of ``KS``
    hit_at: tuple[bool, ...] | None = None
    #: … and per token budget of ``BUDGETS``
    hit_within: tuple[bool, ...] | None = None
    #: this question's recall call(s), milliseconds (None for the baseline)
    latency_ms: float | None = None


def score(question: Question, references: References, system: str, texts: Sequence[str],
          assigned: Sequence[int | None], answer_correct: bool | None = None,
          exact: Coverage | None = None, latency_ms: float | None = None) -> Scored:
    """Score one ranked list: ``assigned[i]`` indexes the expected statement memory ``i`` states."""
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
                  dups / len(texts) if texts else 0.0, answer_correct,
                  exact.at_k if exact else None, exact.within if exact else None, latency_ms)


@dataclass(frozen=True)
class Cell:
    """The figures of one system on one question type (or ``all``)."""

    questions: int
    recall: float | None
    stale_first: float | None
    duplicate_share: float
    answer_accuracy: float | None
    #: exact recall per K of ``KS`` and within each budget of ``BUDGETS`` (None: no turn ids)
    recall_at: tuple[float | None, ...] | None = None
    recall_within: tuple[float | None, ...] | None = None
    #: recall latency over the run, milliseconds
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None


def _columns(rows: Sequence[tuple[bool, ...] | None]) -> tuple[float | None, ...] | None:
    present = [r for r in rows if r is not None]
    if not present:
        return None
    return tuple(_mean([r[i] for r in present]) for i in range(len(present[0])))


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
                                   if s.answer_correct is not None]),
            recall_at=_columns([s.hit_at for s in items if s.hit is not None]),
            recall_within=_columns([s.hit_within for s in items if s.hit is not None]),
            latency_p50_ms=percentile(latencies := [s.latency_ms for s in items
                                                    if s.latency_ms is not None], 0.5),
            latency_p95_ms=percentile(latencies, 0.95))
    return dict(out)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:5.1f}%"


def render_table(cells: dict[str, dict[str, Cell]], k: int) -> str:
    """One block per question type: a row per system, the ratio against the baseline. With
    exact scoring (evidence turn ids), recall@K for every K of ``KS`` and within every token
    budget of ``BUDGETS`` come first; the judge's recall@K follows, as before."""
    systems = [s for s in cells if s != BASELINE] + ([BASELINE] if BASELINE in cells else [])
    kinds = [t for t in (*QUESTION_TYPES, "all") if any(t in cells[s] for s in systems)]
    has_answers = any(c.answer_accuracy is not None for s in systems for c in cells[s].values())
    exact = any(c.recall_at is not None for s in systems for c in cells[s].values())
    exact_head = ("".join(f"  {f'r@{n}':>6}" for n in KS)
                  + "".join(f"  {f'≤{n}t':>6}" for n in BUDGETS)) if exact else ""
    judge_head = f"judge@{k}" if exact else f"recall@{k}"
    head = (f"{'type':<17}{'system':<11}{'n':>5}{exact_head}  {judge_head:>9}  {'× base':>6}  "
            f"{'stale-first':>11}  {'dup share':>9}" + ("  answer acc." if has_answers else ""))
    lines = [head, "-" * len(head)]
    for kind in kinds:
        base = cells.get(BASELINE, {}).get(kind)
        for system in systems:
            cell = cells[system].get(kind)
            if cell is None:
                continue
            ratio = "—"
            mine, theirs = cell.recall, base.recall if base else None
            if exact and cell.recall_at and base and base.recall_at:
                mine, theirs = cell.recall_at[KS.index(10)], base.recall_at[KS.index(10)]
            if mine is not None and theirs:
                ratio = f"{mine / theirs:5.2f}"
            figures = ""
            if exact:
                at = cell.recall_at or (None,) * len(KS)
                within = cell.recall_within or (None,) * len(BUDGETS)
                figures = "".join(f"  {_pct(v):>6}" for v in (*at, *within))
            lines.append(
                f"{kind:<17}{system:<11}{cell.questions:>5}{figures}  {_pct(cell.recall):>9}  "
                f"{ratio:>6}  {_pct(cell.stale_first):>11}  {_pct(cell.duplicate_share):>9}"
                + (f"  {_pct(cell.answer_accuracy):>11}" if has_answers else ""))
        lines.append("")
    latency = [f"{s} p50 {c.latency_p50_ms:.1f} / p95 {c.latency_p95_ms:.1f}"
               for s in systems if (c := cells[s].get("all")) is not None
               and c.latency_p50_ms is not None and c.latency_p95_ms is not None]
    if latency:
        lines.append("recall latency (ms): " + "; ".join(latency))
    return "\n".join(lines).rstrip()
