"""eros — the dreaming worker system.

Idle chat sessions are claimed with one ``FOR UPDATE SKIP LOCKED`` statement, read once by an LLM
that extracts a few durable, categorised memories about the user, embedded in one call and written
to PostgreSQL + pgvector together with the session's stamp in a single transaction.
"""

__version__ = "0.1.0"
