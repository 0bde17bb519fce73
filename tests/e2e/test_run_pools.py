"""``eros run`` starts the per-queue defaults: a prefork worker on the claim, consolidate and
recall queues, a gevent worker on the classify queue, and beat; a session is classified."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.services import ROOT
from testkit.workers import wait_until, worker_env

pytestmark = pytest.mark.e2e


def _children(pid: int) -> list[str]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    cmdlines = []
    for child in out.split():
        try:
            cmdlines.append(Path(f"/proc/{child}/cmdline").read_text().replace("\0", " "))
        except OSError:
            continue
    return cmdlines


def test_eros_run_puts_classification_on_a_gevent_worker(
        db_url: str, engine: Engine, redis_url: str, llm: FakeLLMServer,
        voyage: FakeVoyageServer) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="erosrun", dir="/tmp"))
    env = worker_env(db_url, redis_url, llm.url, voyage.url, EROS_DATA_DIR=str(data_dir),
                     EROS_EMBEDDED="never")
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "dreamt by the green pool")])
    log = open(data_dir / "run.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "eros", "run", "--tick", "1", "-c", "1"],
                            env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        def done() -> bool:
            with engine.connect() as conn:
                return bool(conn.execute(text("SELECT classified_at IS NOT NULL FROM"
                                              " engine.chat_sessions WHERE id = :i"),
                                         {"i": sid}).scalar_one())
        wait_until(done, timeout=90, message="classification under `eros run`")
        workers = [c for c in _children(proc.pid) if " worker " in c]
        green = [c for c in workers if "--pool=gevent" in c]
        prefork = [c for c in workers if "--pool=prefork" in c]
        assert len(green) == 1 and "--queues=eros.classify" in green[0], workers
        assert "--concurrency=128" in green[0]
        assert len(prefork) == 1, workers
        assert "--queues=eros.claim,eros.consolidate,eros.recall" in prefork[0]
        assert "--concurrency=1" in prefork[0]
        with engine.connect() as conn:
            assert conn.execute(text("SELECT content FROM engine.companion_memories"
                                     " WHERE session_id = :i"), {"i": sid}).scalars().all() \
                == ["dreamt by the green pool"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=90)
        log.close()
    assert code == 0, (data_dir / "run.log").read_text(errors="replace")[-3000:]
