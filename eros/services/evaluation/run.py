"""Ask every question of a replayed suite through recall — each strategy, plus the baseline —
and score what comes back (:mod:`eros.core.evaluation.scoring`).

The **baseline** is the reference's profile layer before dreaming: every raw user turn
embedded as it was said, recalled by plain cosine top-K (the same K as ``decay`` and
``composite``). It costs no LLM call; its embedding tokens are counted.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine

from eros.core.evaluation.exact import (
    KS,
    Coverage,
    Item,
    coverage,
    estimate_tokens,
    global_items,
    grouped_items,
)
from eros.core.evaluation.scoring import BASELINE, Cell, Scored, aggregate, score
from eros.core.evaluation.suite import References, Suite, User
from eros.core.lexical import RRF_C, bm25, fuse
from eros.core.ranking import STRATEGIES, Strategy
from eros.core.render import EN, quote_note
from eros.db import replay_sql
from eros.providers.base import ChatCompleter, Embedder
from eros.services.evaluation.judges import EmbeddingJudge, Judge
from eros.services.evaluation.progress import Progress, silent
from eros.services.evaluation.replay import ReplayReport, as_uuid, replay
from eros.services.recall import RecalledMemory, recall_by_vector
from eros.settings import Settings


@dataclass
class EvalResult:
    suite: str
    users: int
    questions: int
    k: int
    judge: str
    embedder: str
    llm: str
    replay: ReplayReport
    baseline_embedding_tokens: int
    judge_llm_calls: int
    wall_secs: float
    cells: dict[str, dict[str, Cell]]
    scored: list[Scored] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        per_user = max(self.users, 1)
        return {
            "suite": self.suite, "users": self.users, "questions": self.questions, "k": self.k,
            "judge": self.judge, "embedder": self.embedder, "llm": self.llm,
            "wall_secs": round(self.wall_secs, 3),
            "pipeline": {**asdict(self.replay),
                         "per_user": {"llm_calls": self.replay.llm_calls / per_user,
                                      "tokens": (self.replay.prompt_tokens
                                                 + self.replay.completion_tokens) / per_user,
                                      "cost_usd": self.replay.cost_usd / per_user}},
            "baseline": {"llm_calls": 0, "embedding_tokens": self.baseline_embedding_tokens},
            "judge_llm_calls": self.judge_llm_calls,
            "systems": {system: {kind: asdict(cell) for kind, cell in kinds.items()}
                        for system, kinds in self.cells.items()},
            "answers": [asdict(s) for s in self.scored]}


#: the eval-only ``hybrid`` system: this strategy's memories plus the raw turns they miss
#: (those ranked by cosine fused with BM25, as a production turn search would)
HYBRID, HYBRID_OF = "hybrid", "composite"
#: the ranked lists the K and token-budget figures are cut from: long enough to fill the
#: largest budget with short memories (``grouped``: per category)
ASK_K = 100
ASK_PER_CATEGORY = 20


#: what a dated note adds (RECALL_RENDER_DATES): charged to memories and raw turns alike
_DATE_TOKENS = estimate_tokens(EN.dated.format(date="2023-06-20"))


def _bullet_tokens(text: str) -> int:
    """Tokens of one rendered, dated bullet (a quoted note, as the prompt section renders
    it; a raw turn is charged the same way)."""
    return estimate_tokens(EN.bullet + quote_note(text, EN)) + _DATE_TOKENS


@dataclass
class _UserData:
    """One user's raw turns (the baseline) and the turn ids each memory came from."""

    turns: list[str]
    turn_ids: list[str | None]
    matrix: npt.NDArray[np.float32]
    sources: dict[uuid.UUID, frozenset[str]]


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
    matrix = np.asarray(raw.vectors, dtype=np.float32).reshape(len(pairs), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    return _UserData([p[0] for p in pairs], [p[1] for p in pairs], matrix, sources), \
        raw.total_tokens


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


def _items(memories: Sequence[RecalledMemory], data: _UserData, grouped: bool) -> list[Item]:
    sources = [data.sources.get(m.id, frozenset()) for m in memories]
    tokens = [_bullet_tokens(m.content) for m in memories]
    return grouped_items(sources, tokens, [m.category for m in memories]) if grouped \
        else global_items(sources, tokens)


def _ask_one(engine: Engine, settings: Settings, user: User, data: _UserData,
             question: str, vector: Sequence[float], strategies: Sequence[Strategy]
             ) -> dict[str, _Answer]:
    answers: dict[str, _Answer] = {}
    uid = as_uuid(user.id)
    for strategy in strategies:
        grouped = strategy == "grouped"
        result = recall_by_vector(engine, uid, vector, strategy=strategy, settings=settings,
                                  query_text=question)
        wide = recall_by_vector(engine, uid, vector, strategy=strategy, settings=settings,
                                k=ASK_PER_CATEGORY if grouped else ASK_K, query_text=question)
        answers[strategy] = _Answer(
            [m.content for m in result.memories], _items(result.memories, data, grouped),
            _items(wide.memories, data, grouped), [m.content for m in wide.memories], grouped,
            result.timings.get("total"))
    top = _top_turns(data, vector, ASK_K)
    texts = [data.turns[i] for i in top]
    items = global_items([frozenset({data.turn_ids[i]} - {None})  # type: ignore[arg-type]
                          for i in top], [_bullet_tokens(t) for t in texts])
    k = settings.recall_k
    answers[BASELINE] = _Answer(texts[:k], items[:k], items, texts, False)
    if HYBRID_OF in answers:
        # the turns re-ordered by the lexical signal too, as a turn search would be
        order = fuse(range(len(top)), bm25(question, texts))
        turns = _Answer([], [], [Item(items[i].sources, items[i].tokens, n + 1)
                                 for n, i in enumerate(order)], [texts[i] for i in order],
                        False)
        answers[HYBRID] = _hybrid(answers[HYBRID_OF], turns, k)
    return answers


def _hybrid(memories: _Answer, turns: _Answer, k: int) -> _Answer:
    """Memories and raw turns in one list by reciprocal rank, an item dropped when what is
    ranked above it already covers its turns (a turn among the sources of memories above, a
    memory whose sources are all turns above — provenance, not the evidence, decides): what a
    prompt holds when the budget left after the memories goes to the turns they miss."""
    scored = [(1 / (RRF_C + rank), kind, item, text)
              for kind, answer in enumerate((memories, turns))
              for rank, (item, text) in enumerate(zip(answer.long, answer.long_texts,
                                                      strict=True), start=1)]
    scored.sort(key=lambda row: (-row[0], row[1]))
    covered: set[str] = set()
    kept: list[Item] = []
    texts: list[str] = []
    for _, _, item, text in scored:
        if item.sources and item.sources <= covered:
            continue  # a turn the memories above already cover, or a memory of turns above
        covered |= item.sources
        kept.append(Item(item.sources, item.tokens, len(kept) + 1))
        texts.append(text)
    return _Answer(texts[:k], kept[:k], kept, texts, False, memories.latency_ms)


def evaluate(engine: Engine, settings: Settings, suite: Suite, llm: ChatCompleter,
             embedder: Embedder, judge: Judge, *, strategies: Sequence[Strategy] = STRATEGIES,
             consolidation: bool = True, extractor: ChatCompleter | None = None,
             progress: Progress = silent) -> EvalResult:
    """Replay ``suite`` into ``engine`` (a scratch database), ask, judge and score.

    Where a question names its evidence turns, every system is also scored exactly, by
    provenance, at every K of ``KS`` and within every token budget of ``BUDGETS``."""
    started = time.perf_counter()
    replayed = replay(engine, settings, suite, llm, embedder, consolidation=consolidation,
                      extractor=extractor, progress=progress)
    k = settings.recall_k
    by_user = defaultdict(list)
    for q in suite.questions:
        by_user[q.user].append(q)
    scored: list[Scored] = []
    baseline_tokens = 0
    mark = time.perf_counter()
    with progress("ask", len(suite.questions)) as advance:
        for user in suite.users:
            questions = by_user.get(user.id, [])
            if not questions:
                continue
            references = References.of(questions)
            data, tokens = _user_data(engine, user, embedder, judge)
            baseline_tokens += tokens
            queries = embedder.embed([q.question for q in questions],
                                     input_type="query").vectors
            asked = []
            for question, vector in zip(questions, queries, strict=True):
                asked.append(_ask_one(engine, settings, user, data, question.question, vector,
                                      strategies))
                advance(1)
            if isinstance(judge, EmbeddingJudge):  # one embedding call for the user's texts
                judge.vectors([*references.statements,
                               *(t for answers in asked for a in answers.values()
                                 for t in a.texts)])
            for question, answers in zip(questions, asked, strict=True):
                for system, answer in answers.items():
                    texts = answer.texts
                    verdict = judge.judge(question, references, texts)
                    exact = answer.coverage(question.evidence_turns, k) \
                        if question.evidence_turns else None
                    scored.append(score(question, references, system, texts, verdict.assigned,
                                        verdict.answer_correct, exact, answer.latency_ms))
    replayed.timings["ask"] = time.perf_counter() - mark
    return EvalResult(suite=suite.name, users=len(suite.users), questions=len(suite.questions),
                      k=k, judge=judge.name, embedder=embedder.name, llm=llm.name,
                      replay=replayed, baseline_embedding_tokens=baseline_tokens,
                      judge_llm_calls=judge.llm_calls,
                      wall_secs=time.perf_counter() - started, cells=aggregate(scored),
                      scored=scored)
