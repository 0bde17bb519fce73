"""Privacy: forget, the erasure log, export, retention and sensitivity consent."""
