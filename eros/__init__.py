"""eros — the dreaming worker system.

Idle chat sessions are claimed with one ``FOR UPDATE SKIP LOCKED`` statement, read once by an LLM
that extracts a few durable, categorised memories about the user, embedded in one call and written
to PostgreSQL + pgvector together with the session's stamp in a single transaction.
"""

import os as _os

__version__ = "0.9.0"

# numpy's OpenBLAS starts one thread per core for every matrix product and spins them while it
# waits. eros's concurrency is its processes and greenlets (a Celery worker's pool), so each
# process gets one BLAS thread unless the operator sets the variable: on two cores the meaning
# layer's training took 6.1 s with two threads against 0.96 s with one. Set here, before
# anything of eros imports numpy (docs/operations.md).
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")
