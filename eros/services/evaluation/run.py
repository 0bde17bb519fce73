"""Ask every question of a replayed suite through recall — each strategy, plus the baseline —
and score what comes back (:mod:`eros.core.evaluation.scoring`).

The **baseline** is the reference's profile layer before dreaming: every raw user turn
embedded as it was said, recalled by plain cosine top-K (the same K as ``decay`` and
``composite``). It costs no LLM call; its embedding tokens are counted.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine

from eros.core.evaluation.scoring import BASELINE, Cell, Scored, aggregate, score
from eros.core.evaluation.suite import References, Suite
from eros.core.ranking import STRATEGIES, Strategy
from eros.providers.base import ChatCompleter, Embedder
from eros.services.evaluation.judges import EmbeddingJudge, Judge
from eros.services.evaluation.replay import ReplayReport, as_uuid, replay
from eros.services.recall import recall_by_vector
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


def _top_k(query: Sequence[float], vectors: list[list[float]], k: int) -> list[int]:
    def cos(v: Sequence[float]) -> float:
        dot = sum(a * b for a, b in zip(query, v, strict=True))
        norm = math.sqrt(sum(a * a for a in v)) * math.sqrt(sum(a * a for a in query))
        return dot / norm if norm else 0.0
    sims = [cos(v) for v in vectors]
    return sorted(range(len(vectors)), key=lambda i: (-sims[i], i))[:k]


def evaluate(engine: Engine, settings: Settings, suite: Suite, llm: ChatCompleter,
             embedder: Embedder, judge: Judge, *, strategies: Sequence[Strategy] = STRATEGIES,
             consolidation: bool = True) -> EvalResult:
    """Replay ``suite`` into ``engine`` (a scratch database), ask, judge and score."""
    started = time.perf_counter()
    replayed = replay(engine, settings, suite, llm, embedder, consolidation=consolidation)
    k = settings.recall_k
    by_user = defaultdict(list)
    for q in suite.questions:
        by_user[q.user].append(q)
    scored: list[Scored] = []
    baseline_tokens = 0
    mark = time.perf_counter()
    for user in suite.users:
        questions = by_user.get(user.id, [])
        if not questions:
            continue
        references = References.of(questions)
        turns = [t.content for s in user.sessions for t in s.turns if t.role == "user"]
        raw = embedder.embed(turns, input_type="document")
        baseline_tokens += raw.total_tokens
        if isinstance(judge, EmbeddingJudge) and judge.embedder is embedder:
            judge.remember(turns, raw.vectors)
        queries = embedder.embed([q.question for q in questions], input_type="query").vectors
        asked: list[dict[str, list[str]]] = []
        for vector in queries:
            ranked: dict[str, list[str]] = {}
            for strategy in strategies:
                result = recall_by_vector(engine, as_uuid(user.id), vector, strategy=strategy,
                                          settings=settings)
                ranked[strategy] = [m.content for m in result.memories]
            ranked[BASELINE] = [turns[i] for i in _top_k(vector, raw.vectors, k)]
            asked.append(ranked)
        if isinstance(judge, EmbeddingJudge):  # one embedding call for all the user's texts
            judge.vectors([*references.statements,
                           *(t for ranked in asked for texts in ranked.values() for t in texts)])
        for question, ranked in zip(questions, asked, strict=True):
            for system, texts in ranked.items():
                verdict = judge.judge(question, references, texts)
                scored.append(score(question, references, system, texts, verdict.assigned,
                                    verdict.answer_correct))
    replayed.timings["ask"] = time.perf_counter() - mark
    return EvalResult(suite=suite.name, users=len(suite.users), questions=len(suite.questions),
                      k=k, judge=judge.name, embedder=embedder.name, llm=llm.name,
                      replay=replayed, baseline_embedding_tokens=baseline_tokens,
                      judge_llm_calls=judge.llm_calls,
                      wall_secs=time.perf_counter() - started, cells=aggregate(scored),
                      scored=scored)
