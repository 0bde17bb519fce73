"""A worker refuses to start on bad configuration, naming what is wrong."""

from __future__ import annotations

import subprocess
import sys

import pytest

from testkit.services import ROOT

pytestmark = pytest.mark.e2e


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "celery", "-A", "eros.worker", "worker",
                           "-c", "1", "--without-mingle", "--without-gossip"],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("override", "needle"), [
    ({"EMBEDDING_DIM": "256"}, "EMBEDDING_DIM is 256 but engine.companion_memories.embedding"
                               " is vector(512)"),
    ({"DREAMING_IDLE_SECS": "soon"}, "DREAMING_IDLE_SECS"),
    ({"REDIS_URL": ""}, "REDIS_URL is not set"),
    ({"DREAMING_CLAIM_STALE_SECS": "60", "LLM_TIMEOUT_SECS": "60"},
     "DREAMING_CLAIM_STALE_SECS (60) must exceed"),
    # issue 34: a plan that reads the HNSW index, which a migrated database has only when
    # `eros migrate` ran with the settings that read it
    ({"RECALL_QUANTIZED_SCAN": "false"}, "RECALL_QUANTIZED_SCAN=false reads the memories'"
                                         " HNSW index"),
])
def test_worker_refuses_to_start(stack_env: dict[str, str], override: dict[str, str],
                                 needle: str) -> None:
    result = _start({**stack_env, **override})
    assert result.returncode != 0
    assert needle in result.stdout + result.stderr


def test_worker_refuses_an_unmigrated_database(stack_env: dict[str, str],
                                               templates) -> None:  # type: ignore[no-untyped-def]
    empty = templates.empty()
    result = _start({**stack_env, "DATABASE_URL": empty})
    assert result.returncode != 0
    assert "eros migrate" in result.stdout + result.stderr
