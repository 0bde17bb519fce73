"""Recall: use cases: the feature's steps, over its SQL, the providers and the kernel."""
