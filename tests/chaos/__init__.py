"""Chaos suite: drain a backlog with several real workers while things break."""
