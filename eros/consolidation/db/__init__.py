"""Consolidation: SQL: every statement of this feature, nothing else."""
