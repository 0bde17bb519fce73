"""Observation replay and exact scoring end to end (issue 24): a tiny synthetic file in
LoCoMo's format (the real one is CC BY-NC and never vendored) is replayed through the real
pipeline — the observations answer the extraction calls, citing their turns by the
transcript's numbers — and every system is scored by provenance beside the embedding judge."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from eros.evaluation.core.exact import BUDGETS, KS
from eros.evaluation.core.formats import convert
from eros.evaluation.core.scoring import BASELINE, render_table
from eros.evaluation.core.suite import Suite
from eros.evaluation.db import replay_sql
from eros.evaluation.services.ids import as_uuid
from eros.evaluation.services.judges import DEFAULT_FLOORS, EmbeddingJudge
from eros.evaluation.services.observations import ObservationReplay
from eros.evaluation.services.run import EvalResult, evaluate
from eros.providers import make_providers
from eros.settings import load_settings


def _turns(n: int, lines: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"speaker": who, "dia_id": f"D{n}:{i}", "text": text}
            for i, (who, text) in enumerate(lines, start=1)]


SAMPLE: list[dict[str, Any]] = [{"sample_id": "synthetic", "conversation": {
    "speaker_a": "Ann", "speaker_b": "Bob",
    "session_1_date_time": "10:00 am on 3 March, 2023",
    "session_1": _turns(1, [
        ("Ann", "I adopted a grey cat last weekend, her name is Miso."),
        ("Bob", "Congrats! I started learning the cello this month."),
        ("Ann", "I work as a nurse at the children's hospital in Leeds."),
        ("Bob", "That sounds demanding.")]),
    "session_2_date_time": "4:30 pm on 20 June, 2023",
    "session_2": _turns(2, [
        ("Ann", "We drove to the Lake District for a hiking weekend."),
        ("Bob", "My cello teacher moved away, so I stopped the lessons."),
        ("Ann", "Miso chewed through my headphones again."),
        ("Bob", "Cats will be cats.")]),
    "session_3_date_time": "9:15 am on 2 October, 2023",
    "session_3": _turns(3, [
        ("Ann", "I got promoted to ward manager at the hospital."),
        ("Bob", "I'm training for the Manchester half marathon."),
        ("Ann", "My sister Jo is getting married in Lisbon next spring."),
        ("Bob", "Lisbon is lovely.")])},
    "observation": {
        "session_1_observation": {
            "Ann": [["Ann is a nurse at the children's hospital in Leeds.", "D1:3"]],
            "Bob": [["Bob started learning the cello.", "D1:2"]]},
        "session_2_observation": {
            # the only memory naming the cat cites session 2's turn, not the adoption (D1:1)
            "Ann": [["Ann has a cat named Miso who chews headphones.", "D2:3"],
                    ["Ann went hiking in the Lake District.", "D2:1"]],
            "Bob": [["Bob stopped cello lessons after his teacher moved away.", "D2:2"]]},
        "session_3_observation": {
            "Ann": [["Ann was promoted to ward manager at the hospital.", "D3:1"],
                    ["Ann's sister Jo is getting married in Lisbon.", "D3:3"]],
            "Bob": [["Bob is training for the Manchester half marathon.", "D3:2"]]}},
    "qa": [
        {"question": "What is the name of Ann's cat?", "answer": "Miso",
         "evidence": ["D1:1"], "category": 4},
        {"question": "Where does Ann work and what was she promoted to?",
         "answer": "children's hospital; ward manager", "evidence": ["D1:3", "D3:1"],
         "category": 1},
        {"question": "When did Ann go hiking in the Lake District?", "answer": "June 2023",
         "evidence": ["D2:1"], "category": 2},
        {"question": "Why did Bob stop his cello lessons?", "answer": "his teacher moved",
         "evidence": ["D2:2"], "category": 4},
        {"question": "What is Ann's dog called?", "adversarial_answer": "Miso",
         "evidence": ["D1:1"], "category": 5}]}]


@pytest.fixture(scope="module")
def suite() -> Suite:
    return convert(SAMPLE, "locomo")


@pytest.fixture(scope="module")
def replayed(engine_module: Engine, suite: Suite) -> tuple[EvalResult, ObservationReplay]:
    settings = load_settings(eros_providers="offline", embedding_dim=512)
    llm, embedder = make_providers(settings)
    judge = EmbeddingJudge(embedder, DEFAULT_FLOORS[embedder.name])
    extractor = ObservationReplay(suite)
    out = evaluate(engine_module, settings, suite, llm, embedder, judge, extractor=extractor)
    print(render_table(out.cells, out.k))
    return out, extractor


def test_observations_are_written_with_the_turns_they_cite(
        replayed: tuple[EvalResult, ObservationReplay], engine_module: Engine,
        suite: Suite) -> None:
    result, extractor = replayed
    assert extractor.misses == 0 and result.replay.classified == 6
    assert result.replay.memories == 8  # every observation of both speakers
    ann = suite.users[0]
    with engine_module.connect() as conn:
        seqs = replay_sql.session_seqs(conn, as_uuid(ann.id))
        sources = replay_sql.memory_sources(conn, as_uuid(ann.id))
    by_seq = {n: t.id for s in ann.sessions
              for n, t in zip(seqs[as_uuid(s.id)], s.turns, strict=True)}
    cited = sorted(sorted(by_seq[n] for n in found) for found in sources.values())
    assert cited == [["D1:3"], ["D2:1"], ["D2:3"], ["D3:1"], ["D3:3"]]


def test_every_system_is_scored_exactly_beside_the_judge(
        replayed: tuple[EvalResult, ObservationReplay]) -> None:
    result, _ = replayed
    assert set(result.cells) == {"grouped", "decay", "composite", "fused", BASELINE}
    for system, kinds in result.cells.items():
        overall = kinds["all"]
        assert overall.recall_at is not None and len(overall.recall_at) == len(KS)
        assert overall.recall_within is not None and len(overall.recall_within) == len(BUDGETS)
        assert overall.recall is not None  # the judge's figure, printed too
        assert kinds["adversarial"].recall_at is None
        if system == BASELINE:
            # a raw turn covers itself, and a handful of turns all fit
            assert overall.recall_at[-1] == overall.recall_within[-1] == 1.0
            assert overall.latency_p50_ms is None
        else:
            assert overall.latency_p50_ms is not None and overall.latency_p95_ms is not None


def test_a_memory_counts_only_for_the_turns_it_came_from(
        replayed: tuple[EvalResult, ObservationReplay]) -> None:
    """The cat question's evidence is D1:1, which no observation cites. The memory naming
    Miso (from D2:3) is recalled, and says the cat's name — but it does not come from the
    evidence turn, so by provenance it covers nothing; the raw turn covers itself."""
    result, _ = replayed
    rows = {(s.question_id, s.system): s for s in result.scored}
    for system in ("grouped", "decay", "composite"):
        cat = rows[("synthetic-0", system)]
        assert cat.returned > 0 and cat.hit_at == (False,) * len(KS)
        assert cat.hit_within == (False,) * len(BUDGETS)
        cello = rows[("synthetic-3", system)]  # Bob's question: Bob's memory citing D2:2
        assert cello.hit_at is not None and cello.hit_at[-1]
    assert rows[("synthetic-0", BASELINE)].hit_at == (True,) * len(KS)
    # fused: composite's memories and the stored turns they do not cover — the adoption turn
    assert rows[("synthetic-0", "fused")].hit_at == (True,) * len(KS)
    multi = rows[("synthetic-1", "composite")]
    assert multi.hit_at is not None and multi.hit_within is not None
    assert multi.hit_at[-1] and multi.hit_within[-1]  # both D1:3 and D3:1 are covered
