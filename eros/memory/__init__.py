"""The shared kernel: the memory model, its writes, claims and provenance, used by every feature."""
