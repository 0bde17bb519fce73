"""The Celery workers ``eros run`` starts: the same per-queue defaults as the Procfile.

Classification waits on the LLM for seconds per session, so its queue runs on a gevent pool
(hundreds of greenlets in one process, time limits enforced by ``ErosTask``); the claim,
consolidation and recall queues stay on prefork, where CPU-heavy clustering and consolidation
get processes of their own. ``--demo`` keeps one worker on every queue: its sample sessions are
few, and one small pool dreams them roughly in time order.
"""

from __future__ import annotations

from typing import Final

from eros.settings import Settings

#: greenlets of the classify worker: the Procfile's ``${CLASSIFY_CONCURRENCY:-128}``
CLASSIFY_CONCURRENCY: Final = 128
#: the classify worker's node name, as the Procfile's ``classify`` entry sets it (``eros health
#: --worker classify@HOST`` pings it); the other worker keeps Celery's default ``celery@%h``,
#: as the Procfile's ``worker`` entry does
CLASSIFY_HOSTNAME: Final = "classify@%h"


def worker_commands(settings: Settings, *, concurrency: int | None, loglevel: str,
                    demo: bool) -> list[tuple[str, list[str]]]:
    """(child name, ``celery -A eros.worker`` arguments) for each worker to start."""
    common = ["worker", f"--loglevel={loglevel}", "--without-gossip", "--without-mingle"]
    sized = [f"--concurrency={concurrency}"] if concurrency else []
    if demo:
        return [("worker", [*common, *sized])]
    others = ",".join((settings.eros_claim_queue, settings.eros_consolidate_queue,
                       settings.eros_recall_queue))
    return [
        ("worker", [*common, "--pool=prefork", *sized, f"--queues={others}"]),
        ("classify", [*common, f"--hostname={CLASSIFY_HOSTNAME}", "--pool=gevent",
                      f"--concurrency={CLASSIFY_CONCURRENCY}",
                      f"--queues={settings.eros_classify_queue}"]),
    ]
