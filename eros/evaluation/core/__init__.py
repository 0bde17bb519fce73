"""The pure half of ``eros eval`` (docs/eval.md): the suite model and its loaders (ours,
LoCoMo, LongMemEval) and the scoring of recalled memories against known evidence. The replay
through the real pipeline is :mod:`eros.evaluation.services`."""
