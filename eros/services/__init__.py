"""Service functions: one per use case, called by the thin Celery tasks and by the CLI."""
