"""One user's questions asked through recall — each production strategy at the production K
and as the long list the larger cuts and the token budgets are taken from — plus the raw-turn
baseline, and scored (:mod:`eros.evaluation.core.scoring`). :func:`ask_user` is what
:func:`eros.evaluation.services.run.ask` runs per user, in this process or in a worker
(:mod:`.parallel`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine

from eros.core.names import FUSED, RecallStrategy
from eros.core.text import estimate_tokens
from eros.evaluation.core.exact import (
    KS,
    Coverage,
    Item,
    coverage,
    global_items,
    grouped_items,
)
from eros.evaluation.core.scoring import BASELINE, Scored, score
from eros.evaluation.core.suite import Question, References, User
from eros.evaluation.db import replay_sql
from eros.evaluation.services.ids import as_uuid
from eros.evaluation.services.judges import EmbeddingJudge, Judge
from eros.providers.base import Embedder
from eros.recall.core.render import EN, quote_note
from eros.recall.db import turns_sql
from eros.recall.services.recall import RecalledMemory, RecalledTurn, recall_by_vector
from eros.settings import Settings

#: the ranked lists the K and token-budget figures are cut from: long enough to fill the
#: largest budget with short memories (``grouped``: per category)
ASK_K = 100
ASK_PER_CATEGORY = 20


#: what a dated note adds (RECALL_RENDER_DATES): charged to memories and raw turns alike
_DATE_TOKENS = estimate_tokens(EN.dated.format(date="2023-06-20"))


@lru_cache(maxsize=1 << 16)
def _bullet_tokens(text: str) -> int:
    """Tokens of one rendered, dated bullet (a quoted note, as the prompt section renders
    it; a raw turn is charged the same way). Cached: every question re-counts the same
    memories and turns (~500 counts a question on LoCoMo)."""
    return estimate_tokens(EN.bullet + quote_note(text, EN)) + _DATE_TOKENS


@dataclass
class _UserData:
    """One user's raw turns (the baseline), the turn ids each memory came from, and the
    turn id of each ``chat_messages.seq`` (what a ``fused`` turn is)."""

    turns: list[str]
    turn_ids: list[str | None]
    matrix: npt.NDArray[np.float32]
    sources: dict[uuid.UUID, frozenset[str]]
    by_seq: dict[int, str] = field(default_factory=dict)


def _user_data(engine: Engine, user: User, embedder: Embedder, judge: Judge
               ) -> tuple[_UserData, int]:
    uid = as_uuid(user.id)
    pairs = [(t.content, t.id) for s in user.sessions for t in s.turns if t.role == "user"]
    raw = embedder.embed([p[0] for p in pairs], input_type="document")
    with engine.connect() as conn:
        seqs = replay_sql.session_seqs(conn, uid)
        provenance = replay_sql.memory_sources(conn, uid)
        stored = replay_sql.memory_vectors(conn, uid) \
            if isinstance(judge, EmbeddingJudge) and judge.embedder is embedder else []
    if isinstance(judge, EmbeddingJudge) and judge.embedder is embedder:
        judge.remember([p[0] for p in pairs], raw.vectors)
        judge.remember([t for t, _ in stored], [v for _, v in stored])
    by_seq: dict[int, str] = {}
    for session in user.sessions:
        numbers = seqs.get(as_uuid(session.id), [])
        if len(numbers) == len(session.turns):  # ingest keeps every turn, in order
            by_seq.update({n: t.id for n, t in zip(numbers, session.turns, strict=True)
                           if t.id is not None})
    sources = {mid: frozenset(by_seq[s] for s in found if s in by_seq)
               for mid, found in provenance.items()}
    _index_turns(engine, uid, user, seqs, raw.vectors, embedder.name)
    matrix = np.asarray(raw.vectors, dtype=np.float32).reshape(len(pairs), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    return _UserData([p[0] for p in pairs], [p[1] for p in pairs], matrix, sources,
                     by_seq), raw.total_tokens


def _index_turns(engine: Engine, uid: uuid.UUID, user: User,
                 seqs: dict[uuid.UUID, list[int]], vectors: Sequence[Sequence[float]],
                 model: str) -> None:
    """Index the user's turns through the product's write (``turns_sql.write_turns``) with
    the vectors just made by the same embedder — only when the replay's classification
    indexed none of them (a pipeline that does not index turns)."""
    ordered: list[int] = []
    for session in user.sessions:
        numbers = seqs.get(as_uuid(session.id), [])
        if len(numbers) != len(session.turns):
            return  # cannot align the suite's turns with the stored ones
        ordered += [n for n, t in zip(numbers, session.turns, strict=True) if t.role == "user"]
    with engine.begin() as conn:
        stored = {int(r.seq): r for r in replay_sql.user_turns(conn, uid)}
        if any(r.indexed for r in stored.values()) or len(ordered) != len(vectors):
            return
        turns_sql.write_turns(conn, [
            turns_sql.TurnRow(seq, stored[seq].session_id, uid, stored[seq].instance_id,
                              stored[seq].sent_at, list(vector), model)
            for seq, vector in zip(ordered, vectors, strict=True) if seq in stored])


def _top_turns(data: _UserData, query: Sequence[float], k: int) -> list[int]:
    """The baseline: the ``k`` raw turns nearest the query by cosine (ties: earlier first)."""
    if not data.turns:
        return []
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    sims = data.matrix @ (q / norm if norm else q)
    order = np.lexsort((np.arange(len(sims)), -sims))
    return [int(i) for i in order[:k]]


@dataclass
class _Answer:
    """One system's answers to one question: at the production K (what the prompt gets:
    RECALL_K, or RECALL_PER_CATEGORY_K per category) and the long list the larger cuts and
    the token budgets are taken from."""

    texts: list[str]
    items: list[Item]
    long: list[Item]
    long_texts: list[str]
    grouped: bool
    latency_ms: float | None = None

    def coverage(self, evidence: Sequence[str], k: int) -> Coverage:
        """Cuts within the production K from its own answer, larger ones from the long list
        (a larger K reads a larger pool, as recall with that K would)."""
        short = coverage(evidence, self.items, grouped=self.grouped)
        wide = coverage(evidence, self.long, grouped=self.grouped)
        return Coverage(tuple(s if cut <= k else w for cut, s, w in
                              zip(KS, short.at_k, wide.at_k, strict=True)), wide.within)


def _covers(item: RecalledMemory | RecalledTurn, data: _UserData) -> frozenset[str]:
    """The suite's turn ids an item covers: a memory's sources, a turn itself."""
    if isinstance(item, RecalledTurn):
        return frozenset({data.by_seq[item.seq]} if item.seq in data.by_seq else ())
    return data.sources.get(item.id, frozenset())


def _items(recalled: Sequence[RecalledMemory | RecalledTurn], data: _UserData,
           grouped: bool) -> list[Item]:
    sources = [_covers(m, data) for m in recalled]
    tokens = [_bullet_tokens(m.content) for m in recalled]
    return grouped_items(sources, tokens, [getattr(m, "category", "") for m in recalled]) \
        if grouped else global_items(sources, tokens)


def _ask_one(engine: Engine, settings: Settings, user: User, data: _UserData,
             question: str, vector: Sequence[float], strategies: Sequence[RecallStrategy],
             persona: uuid.UUID | None = None) -> dict[str, _Answer]:
    """Every strategy's answer to one question, asked as the product asks: for the user,
    talking to the suite's ``persona`` (its relationship layer and its conversation's turns)."""
    answers: dict[str, _Answer] = {}
    uid = as_uuid(user.id)
    # the long list a larger cut and the token budgets are taken from: fused's own budget
    # lifted (the eval cuts every system at every budget itself, by the same estimate)
    unbudgeted = settings.model_copy(update={"recall_token_budget": 100_000})
    for strategy in strategies:
        grouped = strategy == "grouped"
        result = recall_by_vector(engine, uid, vector, strategy=strategy, settings=settings,
                                  query_text=question, instance_id=persona)
        wide = recall_by_vector(engine, uid, vector, strategy=strategy, instance_id=persona,
                                settings=unbudgeted if strategy == FUSED else settings,
                                k=ASK_PER_CATEGORY if grouped else ASK_K, query_text=question)
        answers[strategy] = _Answer(
            [m.content for m in result.items], _items(result.items, data, grouped),
            _items(wide.items, data, grouped), [m.content for m in wide.items], grouped,
            result.timings.get("total"))
    top = _top_turns(data, vector, ASK_K)
    texts = [data.turns[i] for i in top]
    items = global_items([frozenset({data.turn_ids[i]} - {None})  # type: ignore[arg-type]
                          for i in top], [_bullet_tokens(t) for t in texts])
    k = settings.recall_k
    answers[BASELINE] = _Answer(texts[:k], items[:k], items, texts, False)
    return answers


def ask_user(engine: Engine, settings: Settings, user: User, questions: Sequence[Question],
             embedder: Embedder, judge: Judge, strategies: Sequence[RecallStrategy],
             persona: uuid.UUID, advance: Callable[[int], None]
             ) -> tuple[list[Scored], int]:
    """One user's questions asked and scored (each system's answers); the baseline's
    embedding tokens for the user's turns. ``advance(1)`` after each question."""
    k = settings.recall_k
    references = References.of(questions)
    data, tokens = _user_data(engine, user, embedder, judge)
    queries = embedder.embed([q.question for q in questions], input_type="query").vectors
    asked = []
    for question, vector in zip(questions, queries, strict=True):
        asked.append(_ask_one(engine, settings, user, data, question.question, vector,
                              strategies, persona))
        advance(1)
    if isinstance(judge, EmbeddingJudge):  # one embedding call for the user's texts
        judge.vectors([*references.statements,
                       *(t for answers in asked for a in answers.values() for t in a.texts)])
    scored: list[Scored] = []
    for question, answers in zip(questions, asked, strict=True):
        for system, answer in answers.items():
            texts = answer.texts
            verdict = judge.judge(question, references, texts)
            exact = answer.coverage(question.evidence_turns, k) \
                if question.evidence_turns else None
            scored.append(score(question, references, system, texts, verdict.assigned,
                                verdict.answer_correct, exact, answer.latency_ms))
    return scored, tokens
