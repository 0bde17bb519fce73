"""Exact scoring by provenance, token budgets, the lexical signal and the observation replay's
pure parts (issue 24)."""

from __future__ import annotations

import json

from eros.core.text import estimate_tokens
from eros.evaluation.core.exact import (
    BUDGETS,
    KS,
    Coverage,
    coverage,
    covering_level,
    global_items,
    grouped_items,
    level_for_k,
    percentile,
)
from eros.evaluation.core.formats import convert
from eros.evaluation.core.scoring import BASELINE, aggregate, render_table, score
from eros.evaluation.core.suite import Question, References
from eros.evaluation.services.observations import ObservationReplay, category_of
from eros.prompts import user_message
from eros.recall.core.lexical import bm25, fuse, terms
from tests.unit.test_eval_core import LOCOMO


def test_a_memory_covers_the_turns_among_its_sources_and_a_turn_covers_itself() -> None:
    memories = global_items([{"D1:1", "D1:3"}, {"D2:1"}, set()], [10, 10, 10])
    assert covering_level(["D1:3"], memories) == 1
    assert covering_level(["D1:3", "D2:1"], memories) == 2  # multi-hop: every turn
    assert covering_level(["D9:9"], memories) is None  # never covered
    assert covering_level([], memories) is None
    turns = global_items([{"D2:1"}, {"D1:3"}], [40, 40])
    assert covering_level(["D1:3"], turns) == 2


def test_recall_at_k_and_within_budget() -> None:
    # the evidence is in the 7th item: within K=10 and 25, not 5; its cut costs 7 × 80 tokens
    items = global_items([{"x"} if i == 6 else set() for i in range(30)], [80] * 30)
    got = coverage(["x"], items, grouped=False)
    assert got == Coverage((False, True, True), (False, True, True))
    assert KS == (5, 10, 25) and BUDGETS == (500, 1000, 2000)
    # the same position with short items fits the smallest budget
    short = global_items([{"x"} if i == 6 else set() for i in range(30)], [20] * 30)
    assert coverage(["x"], short, grouped=False).within == (True, True, True)
    assert coverage(["y"], short, grouped=False) == Coverage((False,) * 3, (False,) * 3)


def test_grouped_cuts_take_k_over_five_per_category() -> None:
    assert [level_for_k(k, grouped=True) for k in KS] == [1, 2, 5]
    assert [level_for_k(k, grouped=False) for k in KS] == [5, 10, 25]
    # the evidence is the 3rd fact: level 3, inside K=25 (5 per category) only
    items = grouped_items([set(), set(), {"x"}, set()], [10, 10, 10, 10],
                          ["fact", "fact", "fact", "event"])
    assert [i.level for i in items] == [1, 2, 3, 1]
    assert coverage(["x"], items, grouped=True).at_k == (False, False, True)
    # the cut at level 3 costs every item of levels 1–3 (40 tokens)
    assert coverage(["x"], items, grouped=True, budgets=(39, 40)).within == (False, True)


def test_tokens_and_percentiles() -> None:
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("住在杭州") == 4
    assert estimate_tokens("") == 0
    assert percentile([], 0.5) is None
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0


def test_exact_figures_aggregate_and_print_beside_the_judge() -> None:
    q = Question(id="q", user="u", type="single-hop", question="?", evidence=["Lives in Berlin"],
                 evidence_turns=["D1:1"])
    refs = References.of([q])
    rows = [score(q, refs, "grouped", ["Lives in Berlin"], [0],
                  exact=Coverage((True, True, True), (True, True, True)), latency_ms=4.0),
            score(q, refs, BASELINE, ["I moved to Berlin."], [None],
                  exact=Coverage((False, True, True), (False, False, True)))]
    cells = aggregate(rows)
    assert cells["grouped"]["all"].recall_at == (1.0, 1.0, 1.0)
    assert cells[BASELINE]["all"].recall_within == (0.0, 0.0, 1.0)
    assert cells["grouped"]["all"].latency_p50_ms == 4.0
    assert cells[BASELINE]["all"].latency_p50_ms is None
    table = render_table(cells, 10)
    assert "r@25" in table and "≤1000t" in table and "judge@10" in table
    assert "recall latency (ms): grouped p50 4.0 / p95 4.0" in table


def test_lexical_terms_idf_and_fusion() -> None:
    assert terms("When did Caroline go to the LGBTQ support group?") == [
        "caroline", "go", "lgbtq", "support", "group"]
    assert terms("住在杭州") == ["住在", "在杭", "杭州"]
    docs = ["Caroline went to an LGBTQ support group", "Caroline paints", "Caroline runs"]
    scores = bm25("Caroline support group", docs)
    assert scores[0] > 0 and scores[1] == scores[2]  # the name is everywhere: it weighs little
    assert bm25("", docs) == [0.0, 0.0, 0.0]
    # with min_terms, a document saying fewer of the query's distinct words has no score
    two = bm25("Caroline support group", docs, min_terms=2)
    assert two[0] == scores[0] and two[1:] == [0.0, 0.0]
    assert bm25("Caroline", docs, min_terms=2) == bm25("Caroline", docs)  # a shorter query
    # the vector order puts the best lexical match third; the words bring it first
    assert fuse([1, 2, 0], [2.0, 0.0, 0.0]) == [0, 1, 2]
    assert fuse([1, 2, 0], [0.0, 0.0, 0.0]) == [1, 2, 0]  # no shared word: unchanged


LOCOMO_OBS = [{**LOCOMO[0], "observation": {"session_1_observation": {
    "Caroline": [["Caroline moved to Berlin.", "D1:1"]],
    "Melanie": [["Melanie paints sunrises and loves it.", ["D1:2"]]]},
    "session_2_observation": {"Melanie": [["Melanie adopted a dog.", "D2:1; D2:9"]]}}}]


def test_locomo_turn_ids_observations_and_evidence_turns() -> None:
    suite = convert(LOCOMO_OBS, "locomo")
    caroline, melanie = suite.users
    assert [t.id for t in caroline.sessions[0].turns] == ["D1:1", "D1:2"]
    assert [(o.text, o.turns) for o in caroline.sessions[0].observations] == [
        ("Caroline moved to Berlin.", ["D1:1"])]
    assert [o.turns for o in melanie.sessions[1].observations] == [["D2:1", "D2:9"]]
    single, multi, adversarial = suite.questions
    assert single.evidence_turns == ["D1:1"] and multi.evidence_turns == ["D1:2", "D2:1"]
    assert adversarial.evidence_turns == []


def test_observation_replay_cites_the_transcripts_turn_numbers() -> None:
    suite = convert(LOCOMO_OBS, "locomo")
    replay = ObservationReplay(suite)
    numbered = "Session date: 2023-05-08 (Monday)\n---\n[1] user: I moved to Berlin.\n" \
               "[2] assistant: I paint sunrises."
    reply = json.loads(replay.complete("system", user_message(numbered), max_tokens=500).text)
    assert reply == {"memories": [{"content": "Caroline moved to Berlin.", "category": "event",
                                   "importance": 0.5, "sources": [1]}]}
    # Melanie's side of the same session: roles swapped, her observation cites turn 2
    swapped = "Session date: 2023-05-08\n---\n[1] assistant: I moved to Berlin.\n" \
              "[2] user: I paint sunrises."
    reply = json.loads(replay.complete("s", swapped, max_tokens=500).text)
    assert reply["memories"][0]["sources"] == [2]
    assert reply["memories"][0]["category"] == "preference"
    # an unnumbered transcript (a prompt before extract_v3): no citations
    plain = "Session date: 2023-05-08\n---\nuser: I moved to Berlin.\nassistant: I paint sunrises."
    assert "sources" not in json.loads(replay.complete("s", plain, max_tokens=500).text)[
        "memories"][0]
    assert replay.misses == 0
    assert json.loads(replay.complete("s", "user: never said", max_tokens=9).text) == {
        "memories": []}
    assert replay.misses == 1


def test_observation_categories() -> None:
    assert category_of("Caroline's mother lives in Sweden.") == "relation"
    assert category_of("Melanie feels overwhelmed.") == "emotion"
    assert category_of("Melanie loves painting.") == "preference"
    assert category_of("Caroline attended a conference.") == "event"
    assert category_of("Caroline is a counselor.") == "fact"


def test_notes_rendered_with_the_day_they_are_about() -> None:
    from dataclasses import dataclass
    from datetime import UTC, datetime

    from eros.recall.core.render import render_memories

    @dataclass
    class Note:
        content: str
        category: str = "event"
        layer: str = "profile"
        created_at: datetime = datetime(2023, 6, 20, 16, 30, tzinfo=UTC)

    notes = [Note("went hiking in the Lake District")]
    assert render_memories(notes, "en", dated=True).endswith(
        "- “went hiking in the Lake District” (2023-06-20)")
    assert render_memories(notes, "zh", dated=True).endswith("」（2023-06-20）")
    assert render_memories(notes, "en").endswith("District”")  # off unless asked


def test_the_eval_embedding_cache_returns_the_same_vectors_and_stores_no_text(
        tmp_path: object) -> None:
    from pathlib import Path

    from eros.evaluation.db.eval_cache import VectorCache
    from eros.evaluation.services.cached_embedder import CachedEmbedder
    from eros.providers.offline.hashing import LocalEmbedder

    path = Path(str(tmp_path)) / "cache.sqlite3"
    inner = LocalEmbedder(64)
    texts = ["Caroline moved to Berlin", "I paint sunrises", "Caroline moved to Berlin"]
    direct = inner.embed(texts, input_type="document")
    first = CachedEmbedder(inner, VectorCache(path))
    got = first.embed(texts, input_type="document")
    assert got.vectors == direct.vectors and first.misses == 2 and first.hits == 1
    first.cache.close()
    again = CachedEmbedder(inner, VectorCache(path))  # a second run: nothing embedded
    assert again.embed(texts, input_type="document").vectors == direct.vectors
    assert again.misses == 0 and again.hits == 3
    # a query is another input type: not served from the document's vector
    again.embed(["I paint sunrises"], input_type="query")
    assert again.misses == 1
    again.cache.close()
    assert b"Berlin" not in path.read_bytes() and b"sunrises" not in path.read_bytes()
