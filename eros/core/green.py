"""Whether this process runs on gevent's green threads (a ``--pool=gevent`` worker).

Why it matters: per-thread state (``threading.local``) is per-greenlet once gevent has patched
the process, so whatever a library caches per thread — a database pool's sizing, an HTTP
session with its keep-alive connections — is rebuilt for every task.
"""

from __future__ import annotations

import sys


def green_process() -> bool:
    """True in a process whose sockets gevent has patched (a ``--pool=gevent`` worker: Celery
    patches before it imports the app). Never imports gevent itself."""
    monkey = sys.modules.get("gevent.monkey")
    return bool(monkey is not None and monkey.is_module_patched("socket"))
