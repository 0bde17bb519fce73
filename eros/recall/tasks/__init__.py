"""Recall's Celery tasks: ``eros.recall``, the cells' clustering, re-embedding."""
