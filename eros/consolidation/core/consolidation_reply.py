"""The consolidation call: the prompt that names memories by small integers, and the validator
of the model's reply.

Why small integers: a model copying 36-character UUIDs garbles or invents them, and a garbled
UUID that happens to parse would merge the wrong row. A number either belongs to the cluster it
is cited in or the answer for that cluster is rejected — per cluster, so one confused cluster
does not throw away the others. Dates are in the prompt so the model can tell "moved to Tokyo"
(last week) from "lives in Shanghai" (last year); the validator then checks the same dates, so
an older memory can never supersede a newer one whatever the model says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from eros.consolidation.core.consolidation import Memory, PromptCluster, newest_first_key
from eros.core.text import clean_text
from eros.memory.core.parsing import Candidate, find_json_document
from eros.prompts import CONSOLIDATION_HEADER, Prompt

PROMPT_FILE = "consolidate_v1.txt"
#: characters of one memory shown to the model (memories are short; this bounds the prompt).
MAX_SHOWN_CHARS = 300
_NUMBER = re.compile(r"^\s*[#\[]?\s*(\d{1,6})\s*\]?\s*$")


def memory_line(number: int, memory: Memory) -> str:
    """``[3] 2025-03-02 10:15 UTC | fact | importance 0.70 | Lives in Shanghai``."""
    when = memory.created_at.strftime("%Y-%m-%d %H:%M UTC")
    importance = "-" if memory.importance is None else f"{memory.importance:.2f}"
    text = " ".join(clean_text(memory.content).split())[:MAX_SHOWN_CHARS]
    return f"[{number}] {when} | {memory.category} | importance {importance} | {text}"


def build_request(clusters: Sequence[PromptCluster], today: date) -> str:
    """The user turn of the one call per user: every selected cluster, members oldest first."""
    lines = [CONSOLIDATION_HEADER, f"Today is {today.isoformat()}. Each line: [number] date | "
             "category | importance | memory.", ""]
    for item in clusters:
        lines.append(f"Cluster {item.number} (category {item.cluster.category}):")
        lines += [memory_line(n, m) for n, m in zip(item.numbers, item.cluster.members,
                                                     strict=True)]
        lines.append("")
    lines.append("Reply with the JSON object only.")
    return "\n".join(lines)


def _number(value: Any) -> int:
    """3, "3", "#3" and "[3]" are memory 3; anything else (3.5, true, "three") is garbled."""
    if isinstance(value, bool):
        raise ValueError("a memory number must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and (match := _NUMBER.match(value)):
        return int(match.group(1))
    # never quote the value: it is model output, and reasons end up in last_error
    raise ValueError(f"a {type(value).__name__} that is not a memory number")


class ClusterAnswer(BaseModel):
    """One cluster's answer, as the model wrote it (before it is checked against the prompt)."""

    model_config = ConfigDict(extra="ignore")

    cluster: int
    canonical: Candidate | None = None
    duplicates: list[int] = []
    superseded: list[int] = []
    separate: list[int] = []

    @field_validator("cluster", mode="before")
    @classmethod
    def _cluster(cls, value: Any) -> int:
        return _number(value)

    @field_validator("duplicates", "superseded", "separate", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> list[int]:
        if value is None:
            return []
        if not isinstance(value, list):
            value = [value]
        return [_number(v) for v in value]


@dataclass(frozen=True)
class Decision:
    """A validated answer: every member is in exactly one of the three groups."""

    cluster: PromptCluster
    canonical: Candidate | None
    duplicates: tuple[Memory, ...]
    superseded: tuple[Memory, ...]
    separate: tuple[Memory, ...]

    @property
    def changes(self) -> bool:
        """Anything to write: two or more duplicates, or something superseded."""
        return len(self.duplicates) >= 2 or bool(self.superseded)


@dataclass(frozen=True)
class Rejection:
    cluster: int
    reason: str


ReplyStatus = Literal["ok", "unparseable"]


@dataclass(frozen=True)
class ReplyResult:
    status: ReplyStatus
    decisions: tuple[Decision, ...] = ()
    #: clusters whose answer was invalid or missing; their members change nothing.
    rejected: tuple[Rejection, ...] = ()
    error: str | None = None


def _items(document: Any) -> list[Any] | None:
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        for key in ("clusters", "decisions", "results"):
            if isinstance(document.get(key), list):
                return list(document[key])
        if "cluster" in document:
            return [document]
    return None


def _error_text(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "answer"
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"


def parse_reply(reply: str, clusters: Sequence[PromptCluster]) -> ReplyResult:
    """Check the model's answer against what it was asked; never raises.

    ``unparseable`` means no answer could be read at all (the pass then changes nothing).
    Otherwise each cluster is decided or rejected on its own.
    """
    items = _items(find_json_document(reply)) if isinstance(reply, str) else None
    if items is None:
        return ReplyResult("unparseable", error="no JSON object with a 'clusters' list found")
    asked = {c.number: c for c in clusters}
    answers: dict[int, list[ClusterAnswer]] = {}
    rejected: list[Rejection] = []
    for item in items:
        try:
            answer = ClusterAnswer.model_validate(item)
        except (ValidationError, TypeError) as err:
            number = _cluster_of(item)
            reason = _error_text(err) if isinstance(err, ValidationError) else str(err)
            if number in asked:
                answers.setdefault(number, [])  # an unreadable answer poisons its cluster
                rejected.append(Rejection(number, reason))
            continue
        if answer.cluster not in asked:
            continue  # an invented cluster: nothing of ours to change
        answers.setdefault(answer.cluster, []).append(answer)
    decisions: list[Decision] = []
    rejected_numbers = {r.cluster for r in rejected}
    for number, prompt_cluster in asked.items():
        given = answers.get(number)
        if given is None:
            rejected.append(Rejection(number, "no answer for this cluster"))
            continue
        if number in rejected_numbers:
            continue
        if len(given) > 1:
            rejected.append(Rejection(number, "answered more than once"))
            continue
        outcome = check_answer(given[0], prompt_cluster)
        if isinstance(outcome, str):
            rejected.append(Rejection(number, outcome))
        else:
            decisions.append(outcome)
    rejected.sort(key=lambda r: r.cluster)
    return ReplyResult("ok", tuple(decisions), tuple(rejected))


def _cluster_of(item: Any) -> int | None:
    if not isinstance(item, dict):
        return None
    try:
        return _number(item.get("cluster"))
    except ValueError:
        return None


def check_answer(answer: ClusterAnswer, item: PromptCluster) -> Decision | str:
    """The decision, or why this cluster's answer is rejected."""
    members = item.by_number()
    groups = {"duplicates": answer.duplicates, "superseded": answer.superseded,
              "separate": answer.separate}
    placed: dict[int, str] = {}
    for name, numbers in groups.items():
        for number in numbers:
            if number not in members:
                return f"{name} cites memory {number}, which is not in cluster {item.number}"
            if placed.get(number, name) != name:
                return f"memory {number} is both {placed[number]} and {name}"
            placed[number] = name
    duplicates = _members(members, answer.duplicates)
    superseded = _members(members, answer.superseded)
    separate = tuple(m for n, m in members.items() if n not in placed or placed[n] == "separate")
    if superseded and not duplicates:
        return "superseded memories need a canonical memory derived from a newer one"
    if (len(duplicates) >= 2 or superseded) and answer.canonical is None:
        return "no valid canonical memory"
    if superseded:
        newest = max(duplicates, key=newest_first_key)
        for old in superseded:
            if newest_first_key(old) >= newest_first_key(newest):
                number = next(n for n, m in members.items() if m is old)
                return (f"memory {number} is not older than the newest duplicate, so it cannot "
                        "be superseded")
    return Decision(item, answer.canonical, duplicates, superseded, separate)


def _members(members: dict[int, Memory], numbers: list[int]) -> tuple[Memory, ...]:
    unique = sorted(set(numbers))
    return tuple(sorted((members[n] for n in unique), key=newest_first_key))


def load_consolidation_prompt() -> Prompt:
    """The bundled, versioned system prompt of the consolidation call."""
    body = resources.files("eros.prompts").joinpath(PROMPT_FILE).read_text(encoding="utf-8")
    return Prompt(PROMPT_FILE.removesuffix(".txt"), body.strip())
