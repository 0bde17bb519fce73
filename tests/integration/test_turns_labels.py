"""Labels after the fact on the turns recall layer (issue 31 item 4): ``relabel`` (offline and
the model) labels the indexed turns — a turn's label is the most sensitive of its own, the
labeller's and those of the memories citing it — resumably and with counts; a memory labelled
later (relabel, a merge's result) passes its label to the turns it cites at once; a turn
newly labelled with a label its user withheld is erased. Real PostgreSQL, the real services."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, text

from eros.consolidation.services.consolidate import Consolidator, consolidate
from eros.privacy.db import consent_sql, erasure_sql
from eros.privacy.services import consent
from eros.providers.llm import OpenRouterChat
from eros.settings import Settings, load_settings
from testkit.data import add_session
from testkit.fakes import FakeLLMServer, Reply
from tests.integration.test_provenance_consolidate import _axis
from tests.integration.test_turns_erasure import _index
from tests.support.classify import fake_pipeline


def _session(engine: Engine, user: uuid.UUID, *said: str,
             sensitivity: str | None = None) -> list[int]:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", s) for s in said], user_id=user)
    return _index(engine, sid, sensitivity)


def _memory(engine: Engine, user: uuid.UUID, content: str, seqs: list[int], *,
            label: str | None = None, status: str = "current", vector: int = 0,
            fallback: bool = False) -> uuid.UUID:
    with engine.begin() as conn:
        return conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
            " source_seqs, source_fallback, sensitivity, status, created_at)"
            " VALUES (:u, :c, 'fact', CAST(:v AS vector), :s, :f, :l, :st,"
            " now() - interval '1 day') RETURNING id"),
            {"u": user, "c": content, "v": str(_axis(vector)), "s": seqs, "f": fallback,
             "l": label, "st": status}).scalar_one()


def _labels(engine: Engine, seqs: list[int]) -> list[str | None]:
    with engine.connect() as conn:
        found = dict(conn.execute(text("SELECT seq, sensitivity FROM engine.memory_turns"
                                       " WHERE seq = ANY(:s)"), {"s": seqs}).all())
    return [found.get(s, "GONE") for s in seqs]


def _age_index(engine: Engine) -> None:
    """Every turn indexed before the relabel run begins (its cut-off)."""
    with engine.begin() as conn:
        conn.execute(text("UPDATE engine.memory_turns SET indexed_at = now() - interval '1 day'"))


def test_relabel_labels_the_turns_by_their_text_and_by_the_memories_citing_them(
        engine: Engine) -> None:
    user = uuid.uuid4()
    cue, cited, superseded, fallback, plain, strong = _session(
        engine, user, "I was diagnosed with asthma", "we talked about my week",
        "that old thing again", "see you tomorrow", "I like jazz", "I want to end my life")
    _memory(engine, user, "Spoke about a hard week", [cited], label="health")
    _memory(engine, user, "Goes to church", [superseded], label="beliefs", status="superseded")
    _memory(engine, user, "A chat about something", [fallback], label="health", fallback=True)
    _memory(engine, user, "Has asthma", [strong], label="health")  # crisis outranks it
    # a memory written before 0018, unlabelled: the relabel labels it and, with it, its turn
    (old_turn,) = _session(engine, user, "we met for coffee")
    _memory(engine, user, "Takes medication for anxiety", [old_turn])
    _age_index(engine)
    first = consent.relabel(engine, batch=3, max_batches=2)  # memories (1 batch), 3 turns
    assert (first["scanned"], first["labelled"], first["done"]) == (1, 1, False)
    # the memory's turn (inherited) and three turns scanned: a cue word, two cited
    assert (first["turns_scanned"], first["turns_labelled"]) == (3, 4)
    assert _labels(engine, [old_turn]) == ["health"]  # inherited with the memory's label
    rest = consent.relabel(engine, batch=3)  # resumes at the turn cursor
    assert rest["done"] and rest["scanned"] == 0
    assert first["turns_scanned"] + rest["turns_scanned"] == 7 == rest["total_turns_scanned"]
    assert _labels(engine, [cue, cited, superseded, fallback, plain, strong]) == [
        "health", "health", "beliefs", "health", None, "crisis"]
    assert rest["total_turns_labelled"] == 5  # old_turn was labelled by its memory's step
    assert consent.relabel(engine)["turns_scanned"] == 0  # done until --restart
    again = consent.relabel(engine, restart=True)
    assert (again["turns_scanned"], again["turns_labelled"]) == (7, 0)  # nothing to raise


def test_a_turn_relabelled_with_a_withheld_label_is_erased(engine: Engine) -> None:
    user = uuid.uuid4()
    said, other = _session(engine, user, "I pray every morning", "I like jazz")
    with engine.begin() as conn:
        consent_sql.withhold(conn, user, ["beliefs"])
    _age_index(engine)
    result = consent.relabel(engine)
    assert (result["turns_erased"], result["erased"], result["done"]) == (1, 0, True)
    assert _labels(engine, [said, other]) == ["GONE", None]
    with engine.connect() as conn:
        logged = erasure_sql.list_erasures(conn, user)
    assert [(r["scope"], r["counts"]["indexed_turns"]) for r in logged] == [("sensitive", 1)]


def test_a_turn_about_a_withheld_label_under_a_more_sensitive_one_is_erased(
        engine: Engine) -> None:
    """A turn keeps only its most sensitive label: one about health (its text) that a crisis
    memory cites is labelled ``crisis``; the user withheld ``health``, so the relabel erases
    it all the same, with the health erasure."""
    user = uuid.uuid4()
    said, other = _session(engine, user, "my depression got worse", "I like jazz")
    _memory(engine, user, "Spoke of not wanting to go on", [said], label="crisis")
    with engine.begin() as conn:
        consent_sql.withhold(conn, user, ["health"])
    _age_index(engine)
    result = consent.relabel(engine)
    assert result["turns_erased"] == 1 and _labels(engine, [said, other]) == ["GONE", None]
    with engine.connect() as conn:
        logged = erasure_sql.list_erasures(conn, user)
    assert [(r["scope"], r["counts"]["indexed_turns"]) for r in logged] == [("sensitive", 1)]


def test_the_model_labels_the_unlabelled_turns(
        engine: Engine, llm: FakeLLMServer, redis_url: str,
        provider_settings: Callable[..., Settings]) -> None:
    """The same call shape as the memories' (numbered notes, strict reply): only turns still
    unlabelled are sent; costed into the run's figures."""
    user = uuid.uuid4()
    seqs = _session(engine, user, "I have asthma", "my sister came over", "I like jazz")
    (labelled,) = _session(engine, user, "my diagnosis came back", sensitivity="health")
    _age_index(engine)
    sent: list[list[str]] = []

    def model(request: dict[str, Any]) -> Reply:
        notes = json.loads(request["messages"][-1]["content"])
        sent.append([n["note"] for n in notes])
        return Reply(json.dumps({"labels": {str(n["n"]): "health" if "asthma" in n["note"]
                                            else None for n in notes}}))

    llm.set_responder(model)
    settings = provider_settings(voyage=False, redis_url=redis_url)
    result = consent.relabel(engine, labeller="model", settings=settings,
                             llm=OpenRouterChat(settings))
    assert sent == [["I have asthma", "my sister came over", "I like jazz"]]
    assert (result["turns_scanned"], result["turns_labelled"], result["calls"]) == (4, 1, 1)
    assert result["done"] and result["cost_usd"] >= 0
    assert _labels(engine, [*seqs, labelled]) == ["health", None, None, "health"]


def test_a_merge_passes_its_label_to_every_turn_its_result_cites(
        engine: Engine, consolidator: Consolidator) -> None:
    """Two copies of one fact, one labelled: the kept copy takes the label and the union of
    the sources, and the turn only the unlabelled copy cited takes the label too."""
    user = uuid.uuid4()
    first, second = _session(engine, user, "I see a therapist on Mondays",
                             "therapy on Mondays again")
    _memory(engine, user, "Sees a therapist on Mondays", [first], label="health")
    _memory(engine, user, "sees a therapist on mondays.", [second])
    assert _labels(engine, [first, second]) == [None, None]
    assert consolidate(consolidator, user).merged == 1
    assert _labels(engine, [first, second]) == ["health", "health"]



def test_retention_folding_sources_into_a_labelled_survivor_labels_their_turns(
        engine: Engine, db_url: str) -> None:
    """A merged member written before provenance (no ``source_seqs``) is deleted by
    HISTORY_RETENTION_DAYS; its extraction window moves to the survivor (issue 32), whose
    label the window's turns then carry."""
    from eros.privacy.services import retention

    user = uuid.uuid4()
    (cited,) = _session(engine, user, "my migraines are back")
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "headache again"), ("user", "bad day")], user_id=user)
    window = _index(engine, sid)
    survivor = _memory(engine, user, "Has migraines", [cited], label="health")
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, session_id, content, category,"
            " status, replaced_by, replaced_at) VALUES (:u, :s, 'has headaches', 'fact',"
            " 'merged', :r, now() - interval '40 days')"), {"u": user, "s": sid, "r": survivor})
    assert _labels(engine, window) == [None, None]
    settings = load_settings(database_url=db_url, history_retention_days=30)
    assert retention.apply(engine, settings)["companion_memories"] == 1
    assert _labels(engine, window) == ["health", "health"]


def test_a_withdrawn_labels_turns_are_not_indexed_again_until_allowed(
        engine: Engine, llm: FakeLLMServer, provider_settings: Callable[..., Settings]) -> None:
    """Consent that lasts covers the turns: after ``forget --sensitive health`` the next
    sessions' health turns are not indexed (the rest are), until the product lifts it."""
    from eros.dreaming.services.classify import classify, start_attempt
    from eros.memory.db import repo
    from eros.privacy.services import forget
    from testkit.data import mem_line
    from testkit.fakes.llm_server import extract_memories, last_user_text

    llm.set_responder(lambda request: Reply(json.dumps(
        {"memories": extract_memories(last_user_text(request))})))
    settings = provider_settings()
    pipeline = fake_pipeline(settings, engine)
    user = uuid.uuid4()

    def talk() -> dict[str, str | None]:
        with engine.begin() as conn:
            sid = add_session(conn, [mem_line("fact", 0.7, "Has had insomnia for months"),
                                     ("user", f"I like jazz {uuid.uuid4().hex[:6]}")],
                              user_id=user)
            claim = repo.claim_one(conn, sid, stale_secs=600)
        assert claim is not None
        attempt = start_attempt(pipeline, sid, claim.token)
        assert attempt is not None
        classify(pipeline, attempt)
        with engine.connect() as conn:
            return {("insomnia" if "insomnia" in r.content else "jazz"): r.sensitivity
                    for r in conn.execute(text(
                        "SELECT m.content, t.sensitivity FROM engine.memory_turns t JOIN"
                        " engine.chat_messages m ON m.seq = t.seq WHERE t.session_id = :s"),
                        {"s": sid})}

    assert talk() == {"insomnia": "health", "jazz": None}
    assert forget.forget_sensitive(engine, user, "health")["indexed_turns"] == 1
    assert talk() == {"jazz": None}  # withheld: not indexed
    consent.allow_sensitive(engine, user, "health")
    assert talk() == {"insomnia": "health", "jazz": None}
