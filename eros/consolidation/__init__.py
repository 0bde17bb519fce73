"""Consolidation: merge, supersede and rank a user's memories in later passes."""
