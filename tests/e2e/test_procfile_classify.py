"""The Procfile's ``classify`` entry: the classify queue on a gevent worker, with the contract
``worker`` entry narrowed to the other queues by Celery's own CELERY_WORKER_QUEUES variable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.services import ROOT
from testkit.workers import wait_until, worker_env

pytestmark = pytest.mark.e2e
HONCHO = [sys.executable, "-m", "honcho", "-f", str(ROOT / "Procfile")]


def test_classify_entry_takes_the_classify_queue_on_gevent(
        db_url: str, engine: Engine, redis_url: str, llm: FakeLLMServer,
        voyage: FakeVoyageServer, tmp_path: Path) -> None:
    env = worker_env(db_url, redis_url, llm.url, voyage.url, DREAMING_TICK_SECS="1",
                     WORKER_CONCURRENCY="1", CLASSIFY_CONCURRENCY="8",
                     CELERY_WORKER_QUEUES="eros.claim,eros.consolidate,eros.recall",
                     BEAT_STATE_FILE=str(tmp_path / "beat-state"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    with engine.begin() as conn:
        sids = [add_session(conn, [mem_line("fact", 0.5, f"green {i}")]) for i in range(3)]
    log_path = tmp_path / "honcho.log"
    log = open(log_path, "wb")  # noqa: SIM115
    proc = subprocess.Popen([*HONCHO, "start", "worker", "classify", "beat"], env=env,
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        def done() -> bool:
            with engine.connect() as conn:
                return conn.execute(text("SELECT count(*) FROM engine.chat_sessions"
                                         " WHERE classified_at IS NOT NULL")).scalar_one() == 3
        wait_until(done, timeout=90, message="classification via the Procfile's classify entry")
        with engine.connect() as conn:
            contents = sorted(conn.execute(text("SELECT content FROM engine.companion_memories"
                                                " WHERE session_id = ANY(:s)"),
                                           {"s": sids}).scalars())
        assert contents == ["green 0", "green 1", "green 2"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
    # honcho prefixes each line with the time and the entry: "17:23:41 classify.1 | ..."
    lines = [(line.split()[1], line.split("|", 1)[1]) for line in
             log_path.read_text(errors="replace").splitlines() if " | " in line]
    ran = [name for name, line in lines
           if "eros.classify_session[" in line and "succeeded" in line]
    assert ran == ["classify.1"] * 3, ran
    # eros's gevent pool (eros/tasks/green_pool.py): Celery names a pool by its module
    assert any(name == "classify.1" and "concurrency: 8 (green_pool)" in line
               for name, line in lines)
    # the narrowed prefork worker consumes the other queues only
    queues = [line.split()[1] for name, line in lines
              if name == "worker.1" and "exchange=" in line]
    assert sorted(queues) == ["eros.claim", "eros.consolidate", "eros.recall"], queues
