"""Evaluation: run a suite (ours or LoCoMo) through the real pipeline and score recall."""
