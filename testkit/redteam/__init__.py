"""The red-team corpus loader and the harness that runs its cases through the real pipeline
(tests/redteam and bench/poisoning_bench.py, bench/guard_dev.py use both)."""
