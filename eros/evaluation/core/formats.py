"""Loaders for the public benchmarks, converted into an eros :class:`~.suite.Suite` (nothing is
downloaded: the user points ``eros eval --suite`` at files they already have).

- **LoCoMo** (``locomo10.json``): ten long conversations between two people. Eros reads only
  the *user's* turns, so each conversation is replayed twice, once per speaker as the user;
  a question goes to the speaker who says its evidence turns (``"D3:7"``), whose text becomes
  the evidence statement. Categories: 1 multi-hop, 2 temporal, 3 open-domain (scored as
  single-hop), 4 single-hop, 5 adversarial.
- **LongMemEval** (``longmemeval_s.json``): one haystack of sessions per question; each item
  becomes a user, the turns marked ``has_answer`` are the evidence. Types map onto ours
  (single-session-* → single-hop, multi-session → multi-hop, temporal-reasoning → temporal,
  knowledge-update; ``*_abs`` ids → adversarial).
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from eros.evaluation.core.suite import Question, QuestionType, Suite, SuiteError, parse_suite

Format = Literal["eros", "locomo", "longmemeval"]
_NS = uuid.UUID("0c6f3b0e-6a43-4c39-8a55-3f0f2e6c1a19")
_LOCOMO_TYPES: dict[int, QuestionType] = {1: "multi-hop", 2: "temporal", 3: "single-hop",
                                          4: "single-hop", 5: "adversarial"}
_LME_TYPES: dict[str, QuestionType] = {
    "single-session-user": "single-hop", "single-session-assistant": "single-hop",
    "single-session-preference": "single-hop", "multi-session": "multi-hop",
    "temporal-reasoning": "temporal", "knowledge-update": "knowledge-update"}
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def convert(document: Any, fmt: Format) -> Suite:
    """A suite from a parsed JSON document of the given format; SuiteError if it is not one."""
    if fmt == "eros":
        return parse_suite(document)
    if not isinstance(document, list) or not document:
        raise SuiteError(f"not a {fmt} file: expected a non-empty JSON list")
    try:
        return locomo(document) if fmt == "locomo" else longmemeval(document)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        if isinstance(err, SuiteError):
            raise
        raise SuiteError(f"not a {fmt} file: {type(err).__name__}: {err}") from None


def _uid(*parts: object) -> str:
    return str(uuid.uuid5(_NS, "/".join(map(str, parts))))


def _locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"``."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _dia_ids(value: Any) -> list[str]:
    """An observation's turn reference: ``"D1:3"``, a list of them, or (rarely, in the
    published file) several in one string."""
    items = value if isinstance(value, list) else [value]
    return [m for item in items for m in re.findall(r"D\d+:\d+", str(item))]


def _observations(sample: dict[str, Any], number: int, speaker: str) -> list[dict[str, Any]]:
    block = (sample.get("observation") or {}).get(f"session_{number}_observation") or {}
    out = []
    for item in block.get(speaker) or []:
        if isinstance(item, list) and item and str(item[0]).strip():
            out.append({"text": str(item[0]).strip(),
                        "turns": _dia_ids(item[1]) if len(item) > 1 else []})
    return out


def locomo(samples: list[dict[str, Any]]) -> Suite:
    users: list[dict[str, Any]] = []
    questions: list[Question] = []
    for n, sample in enumerate(samples):
        conv = sample["conversation"]
        sample_id = sample.get("sample_id", n)
        speakers = [conv["speaker_a"], conv["speaker_b"]]
        numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
        said: dict[str, tuple[str, str]] = {}  # dia_id -> (speaker, text)
        for speaker in speakers:
            sessions = []
            for number in numbers:
                start = _locomo_date(conv[f"session_{number}_date_time"])
                turns = []
                for i, turn in enumerate(conv[f"session_{number}"]):
                    if not str(turn.get("text") or "").strip():
                        continue  # an image-only turn: nothing to read
                    said[turn["dia_id"]] = (turn["speaker"], turn["text"])
                    role = "user" if turn["speaker"] == speaker else "assistant"
                    turns.append({"role": role, "content": turn["text"], "id": turn["dia_id"],
                                  "at": (start + timedelta(minutes=i)).isoformat()})
                if turns:
                    sessions.append({"id": _uid(sample_id, speaker, number), "turns": turns,
                                     "observations": _observations(sample, number, speaker)})
            users.append({"id": _uid(sample_id, speaker), "name": speaker, "language": "en",
                          "sessions": sessions})
        for i, qa in enumerate(sample["qa"]):
            kind = _LOCOMO_TYPES.get(int(qa.get("category", 4)), "single-hop")
            ids = [d for d in _dia_ids(qa.get("evidence", [])) if d in said]
            refs = [said[d] for d in ids]
            speaker = refs[0][0] if refs else speakers[0]
            evidence = [] if kind == "adversarial" else [text for _, text in refs]
            if kind != "adversarial" and not evidence:
                continue  # no usable evidence: cannot be scored by recall
            questions.append(Question(
                id=f"{sample_id}-{i}", user=_uid(sample_id, speaker), type=kind,
                question=qa["question"], evidence=evidence,
                evidence_turns=[] if kind == "adversarial" else list(dict.fromkeys(ids)),
                answer=str(qa.get("answer", qa.get("adversarial_answer", "")))))
    return Suite(name="locomo", users=users, questions=questions)  # type: ignore[arg-type]


def _lme_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"``."""
    return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", text.strip()),
                             "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def longmemeval(items: list[dict[str, Any]]) -> Suite:
    users: list[dict[str, Any]] = []
    questions: list[Question] = []
    for item in items:
        qid = str(item["question_id"])
        user = _uid("lme", qid)
        sessions, evidence, evidence_turns = [], [], []
        for sid, date, turns in zip(item["haystack_session_ids"], item["haystack_dates"],
                                    item["haystack_sessions"], strict=True):
            start = _lme_date(date)
            rows = []
            for i, turn in enumerate(turns):
                turn_id = f"{sid}:{i}"
                if turn.get("has_answer") and turn["role"] == "user":
                    evidence.append(turn["content"])
                    evidence_turns.append(turn_id)
                rows.append({"role": turn["role"], "content": turn["content"] or "…",
                             "id": turn_id, "at": (start + timedelta(minutes=i)).isoformat()})
            if rows:
                sessions.append({"id": _uid("lme", qid, sid), "turns": rows})
        abstain = qid.endswith("_abs")
        kind: QuestionType = "adversarial" if abstain else \
            _LME_TYPES.get(item["question_type"], "single-hop")
        if not abstain and not evidence:
            continue  # evidence said by the assistant only: eros never reads those turns
        users.append({"id": user, "name": qid, "language": "en", "sessions": sessions})
        questions.append(Question(id=qid, user=user, type=kind, question=item["question"],
                                  evidence=[] if abstain else evidence,
                                  evidence_turns=[] if abstain else evidence_turns,
                                  answer=str(item.get("answer", ""))))
    return Suite(name="longmemeval", users=users, questions=questions)  # type: ignore[arg-type]
