"""Re-embedding onto a new model and recall across models, against a real PostgreSQL and the
real voyageai SDK with the fake Voyage server (issue 18)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from eros.providers import make_embedder
from eros.recall.services.recall import recall
from eros.recall.services.reembed import ReembedBusy, Reembedder
from eros.settings import Settings, load_settings
from testkit.fakes import FakeVoyageServer
from testkit.workers import wait_until

OLD, NEW = "voyage-3.5-lite", "voyage-4-lite"
ROOT = Path(__file__).resolve().parents[2]


def _settings(db_url: str, voyage: FakeVoyageServer, **extra: object) -> Settings:
    return load_settings(database_url=db_url, voyage_api_key="k", voyage_base_url=voyage.url,
                         provider_max_retries=0, embedding_timeout_secs=5, **extra)


def _seed(engine: Engine, users: list[uuid.UUID], n: int, model: str | None = OLD) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
            " embedding_model)"
            " SELECT (CAST(:users AS uuid[]))[1 + g % cardinality(CAST(:users AS uuid[]))],"
            "        'memory number ' || g || ' about jazz and tea', 'fact',"
            "        CAST(array_fill(CAST(1 AS real), ARRAY[512]) AS vector), :model"
            "   FROM generate_series(1, :n) AS g"), {"users": users, "n": n, "model": model})


def _models(engine: Engine) -> dict[str | None, int]:
    with engine.connect() as conn:
        return {r.embedding_model: r.n for r in conn.execute(text(
            "SELECT embedding_model, count(*) AS n FROM engine.companion_memories GROUP BY 1"))}


def _document_inputs(voyage: FakeVoyageServer) -> list[int]:
    return [len(r.body["input"]) for r in voyage.requests
            if r.body.get("input_type") == "document"]


def test_every_row_moves_in_batches_of_the_configured_size(engine: Engine, db_url: str,
                                                           voyage: FakeVoyageServer) -> None:
    users = [uuid.uuid4(), uuid.uuid4()]
    _seed(engine, users, 45)
    _seed(engine, users, 5, model=None)  # rows from before models were recorded
    _seed(engine, users, 3, model=NEW)   # already done
    settings = _settings(db_url, voyage, reembed_batch=7)
    worker = Reembedder(settings, engine, make_embedder(settings, model=NEW))
    assert worker.pending() == 50
    seen: list[int] = []
    report = worker.run(on_batch=seen.append)
    assert report.finished and report.done == 50 and report.batches == 8
    assert seen == [7] * 7 + [1] and _document_inputs(voyage) == seen
    assert {r.body["model"] for r in voyage.requests} == {NEW}
    assert _models(engine) == {NEW: 53}
    again = worker.run()
    assert again.finished and again.done == 0 and again.batches == 0


def test_one_run_at_a_time(engine: Engine, db_url: str, voyage: FakeVoyageServer) -> None:
    _seed(engine, [uuid.uuid4()], 3)
    settings = _settings(db_url, voyage)
    worker = Reembedder(settings, engine, make_embedder(settings, model=NEW))
    with engine.connect() as holder:
        holder.execute(text("SELECT pg_advisory_lock(hashtext('eros.reembed'))"))
        with pytest.raises(ReembedBusy):
            worker.run()
        holder.execute(text("SELECT pg_advisory_unlock(hashtext('eros.reembed'))"))
    assert worker.run().done == 3


def test_recall_embeds_the_query_per_model_and_never_ranks_them_together(
        engine: Engine, db_url: str, voyage: FakeVoyageServer) -> None:
    user = uuid.uuid4()
    _seed(engine, [user], 6)
    settings = _settings(db_url, voyage)
    default = make_embedder(settings)  # the configured (old) model
    with engine.begin() as conn:  # half the rows moved, as when a re-embed is interrupted
        conn.execute(text("UPDATE engine.companion_memories SET embedding_model = :m WHERE id IN"
                          " (SELECT id FROM engine.companion_memories ORDER BY id LIMIT 3)"),
                     {"m": NEW})
    voyage.reset()
    result = recall(engine, default, user, "jazz", strategy="decay", k=6, settings=settings)
    queries = [r.body for r in voyage.requests if r.body.get("input_type") == "query"]
    assert sorted(q["model"] for q in queries) == [OLD, NEW]
    assert result.plan == "models" and len(result.memories) == 6
    with engine.connect() as conn:
        model_of = dict(conn.execute(text(
            "SELECT id, embedding_model FROM engine.companion_memories")).all())
    # interleaved by rank: the two models alternate, never one model's block by score
    assert [model_of[m.id] for m in result.memories] in ([OLD, NEW] * 3, [NEW, OLD] * 3)

    # all rows on the new model: one query, embedded with the rows' model, not the default's
    with engine.begin() as conn:
        conn.execute(text("UPDATE engine.companion_memories SET embedding_model = :m"),
                     {"m": NEW})
    voyage.reset()
    single = recall(engine, default, user, "jazz", strategy="decay", k=6, settings=settings)
    assert [r.body["model"] for r in voyage.requests] == [NEW]
    assert single.plan != "models" and len(single.memories) == 6


def test_sigkill_mid_run_then_resume(engine: Engine, db_url: str, voyage: FakeVoyageServer,
                                     tmp_path: Path) -> None:
    """A re-embed killed with SIGKILL resumes where it stopped; recall answers throughout;
    every row is on the new model at the end and no committed batch is embedded twice."""
    users = [uuid.uuid4() for _ in range(4)]
    total, batch = 240, 12
    _seed(engine, users, total)
    voyage.set_latency(0.05)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env.update(DATABASE_URL=db_url, VOYAGE_API_KEY="k", VOYAGE_BASE_URL=voyage.url,
               EMBEDDING_MODEL=NEW, REEMBED_BATCH=str(batch), EROS_EMBEDDED="never",
               EROS_DATA_DIR=str(tmp_path), PYTHONUNBUFFERED="1")
    settings = _settings(db_url, voyage)
    default = make_embedder(settings)  # recall's configured embedder: the old model
    answers: list[int] = []
    stop = threading.Event()

    def recall_loop() -> None:
        while not stop.is_set():
            answers.append(len(recall(engine, default, users[0], "jazz", strategy="decay",
                                      k=5, settings=settings).memories))

    proc = subprocess.Popen([sys.executable, "-m", "eros", "reembed"], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader = threading.Thread(target=recall_loop)
    reader.start()
    try:
        wait_until(lambda: _models(engine).get(NEW, 0) >= 5 * batch, timeout=60)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        before_resume = _models(engine)
        assert 0 < before_resume.get(NEW, 0) < total  # really stopped mid-way
        done_before = len(answers)
        wait_until(lambda: len(answers) > done_before + 2, timeout=30)  # on mixed rows
    finally:
        stop.set()
        reader.join(timeout=30)
    assert answers and all(n == 5 for n in answers)
    voyage.set_latency(0.0)
    resumed = subprocess.run([sys.executable, "-m", "eros", "reembed", "--json"], env=env,
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert _models(engine) == {NEW: total}
    embedded = sum(_document_inputs(voyage))
    # at most the batch in flight at the kill is embedded twice
    assert total <= embedded <= total + batch
    assert '"finished": true' in resumed.stdout


def test_the_global_embedding_limits_apply(engine: Engine, db_url: str, redis_url: str,
                                           voyage: FakeVoyageServer) -> None:
    """Requests per minute make batches wait (Redis buckets shared with classification); a
    batch is cut to what the token bucket can hold."""
    from eros.providers.ratelimit import make_limiter

    _seed(engine, [uuid.uuid4()], 24)  # ~8 tokens a text
    settings = _settings(db_url, voyage, redis_url=redis_url, reembed_batch=100,
                         embedding_requests_per_minute=60, embedding_tokens_per_minute=1200,
                         rate_limit_burst_secs=5)  # buckets: 5 requests, 100 tokens
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    worker = Reembedder(settings, engine, make_embedder(settings, model=NEW),
                        make_limiter(settings))
    report = worker.run(sleep=sleep)
    assert report.finished and report.done == 24 and _models(engine) == {NEW: 24}
    sizes = _document_inputs(voyage)
    assert sum(sizes) == 24 and max(sizes) <= 100 // 8 and len(sizes) >= 2
    assert waits and report.throttled_secs > 0  # the token bucket made it wait
