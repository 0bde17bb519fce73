"""Celery: the app factory, the beat schedule and scheduler, the base task class and one
module per task family. Tasks are thin: decode arguments, call a service, map errors."""
