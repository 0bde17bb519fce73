"""An evaluation suite: users with dated multi-session conversations, and questions whose
answers are known statements (``evidence``; for knowledge updates also the outdated ``stale``
ones). The shipped suite (``eros/data/eval_suite.json``, built by
``scripts/build_eval_suite.py``) is in this format; :mod:`.formats` converts LoCoMo and
LongMemEval files into it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

QuestionType = Literal["single-hop", "multi-hop", "temporal", "knowledge-update",
                       "adversarial"]
QUESTION_TYPES: tuple[QuestionType, ...] = ("single-hop", "multi-hop", "temporal",
                                            "knowledge-update", "adversarial")
SHIPPED = "eval_suite.json"


class SuiteError(ValueError):
    """The suite file is not a suite: the message says where."""


class Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["user", "assistant"]
    content: str = Field(min_length=1)
    at: datetime
    #: the suite's own id of the turn (LoCoMo's dia_id ``"D3:7"``): evidence by turn id is
    #: scored exactly, through each memory's provenance (docs/eval.md, "Exact scoring")
    id: str | None = None


class Observation(BaseModel):
    """A fact written about the user from this session, with the turns it came from (LoCoMo's
    ``session_N_observation``): ``eros eval --extractor observations`` replays these as the
    model's reply."""

    model_config = ConfigDict(extra="ignore")
    text: str = Field(min_length=1)
    turns: list[str] = []


class Session(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    turns: list[Turn] = Field(min_length=1)
    #: the facts an ideal extractor would write from this session (optional)
    observations: list[Observation] = []

    @property
    def ended_at(self) -> datetime:
        return max(t.at for t in self.turns)


class User(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    name: str = ""
    language: str = ""
    sessions: list[Session] = Field(min_length=1)


class Question(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    user: str
    type: QuestionType
    question: str = Field(min_length=1)
    #: statements that answer it (all of them: a multi-hop question needs each)
    evidence: list[str] = []
    #: statements a knowledge update made outdated
    stale: list[str] = []
    #: the gold answer, for the LLM judge's answer accuracy
    answer: str = ""
    #: the ids of the turns that hold the evidence (when the suite knows them): a memory
    #: covers such a turn iff the turn is among its sources, a raw turn covers itself
    evidence_turns: list[str] = []

    @model_validator(mode="after")
    def _evidence_unless_adversarial(self) -> Question:
        if self.type != "adversarial" and not self.evidence:
            raise ValueError(f"question {self.id}: a {self.type} question needs evidence")
        return self


class Suite(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    users: list[User] = Field(min_length=1)
    questions: list[Question] = Field(min_length=1)

    @model_validator(mode="after")
    def _questions_name_users(self) -> Suite:
        known = {u.id for u in self.users}
        for q in self.questions:
            if q.user not in known:
                raise ValueError(f"question {q.id} names unknown user {q.user}")
        return self

    def subset(self, users: int | None) -> Suite:
        """The first ``users`` users and their questions (a quicker run)."""
        if users is None or users >= len(self.users):
            return self
        kept = self.users[:users]
        ids = {u.id for u in kept}
        return Suite(name=f"{self.name}[:{users}]", users=kept,
                     questions=[q for q in self.questions if q.user in ids])


@dataclass(frozen=True)
class References:
    """Every statement a user's questions name (evidence and stale), for judges that map a
    memory to the statement it states."""

    statements: tuple[str, ...]

    @classmethod
    def of(cls, questions: Sequence[Question]) -> References:
        seen: dict[str, None] = {}
        for q in questions:
            for s in (*q.evidence, *q.stale):
                seen.setdefault(s, None)
        return cls(tuple(seen))


def parse_suite(document: Any) -> Suite:
    """A suite from parsed JSON; SuiteError names the first problem."""
    try:
        return Suite.model_validate(document)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SuiteError(f"not an eros eval suite: {where}: {first['msg']}") from None


def load_suite_text(text: str) -> Suite:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise SuiteError(f"not JSON: line {err.lineno} column {err.colno}: {err.msg}") from None
    return parse_suite(document)


def shipped_suite() -> Suite:
    """The suite eros ships (10 users × 10 sessions, English and Chinese)."""
    return load_suite_text(resources.files("eros.data").joinpath(SHIPPED)
                           .read_text(encoding="utf-8"))
