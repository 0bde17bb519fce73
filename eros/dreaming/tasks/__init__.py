"""Dreaming's Celery tasks: claim, classify, and the unscreened backlog's beat task."""
