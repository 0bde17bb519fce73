"""The Procfile's entries work as ops run them: honcho start release, then worker and beat."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from eros.guard.core.guard_meaning import load_bank
from eros.guard.services.guard_training import BANK_BATCH
from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.services import ROOT, TemplateDatabases
from testkit.workers import wait_until, worker_env

pytestmark = pytest.mark.e2e
HONCHO = [sys.executable, "-m", "honcho", "-f", str(ROOT / "Procfile")]


def test_release_then_worker_and_beat(templates: TemplateDatabases, redis_url: str,
                                      llm: FakeLLMServer, voyage: FakeVoyageServer,
                                      tmp_path: Path) -> None:
    url = templates.empty()
    env = worker_env(url, redis_url, llm.url, voyage.url, DREAMING_TICK_SECS="1",
                     WORKER_CONCURRENCY="2", BEAT_STATE_FILE=str(tmp_path / "beat-state"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    subprocess.run([*HONCHO, "start", "release"], env=env, cwd=ROOT, check=True, timeout=120,
                   capture_output=True)
    engine = create_engine(url)
    # the release (`eros migrate`) made the guard's meaning model for the live embedder: the
    # worker finds it and no task ever embeds the bank (issue 30)
    training = voyage.request_count
    assert training == math.ceil(len(load_bank().exemplars) / BANK_BATCH)
    with engine.begin() as conn:
        assert "companion_memories" in inspect(conn).get_table_names(schema="engine")
        assert conn.execute(text("SELECT count(*) FROM engine.guard_classifiers")
                            ).scalar_one() == 1
        sid = add_session(conn, [mem_line("preference", 0.4, "Likes oolong tea")])
    log = open(tmp_path / "honcho.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([*HONCHO, "start", "worker", "beat"], env=env, cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def done() -> bool:
            with engine.connect() as conn:
                return conn.execute(text("SELECT classified_at IS NOT NULL FROM"
                                         " engine.chat_sessions WHERE id = :i"),
                                    {"i": sid}).scalar_one()
        wait_until(done, timeout=90, message="classification via the Procfile's worker and beat")
        with engine.connect() as conn:
            content = conn.execute(text("SELECT content FROM engine.companion_memories")).all()
        assert [r.content for r in content] == ["Likes oolong tea"]
        assert voyage.request_count == training + 1  # one call for the session, no training
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
        engine.dispose()
        templates.drop(url)
