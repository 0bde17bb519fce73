"""Privacy's Celery tasks: the forgets, consent and relabelling, retention."""
