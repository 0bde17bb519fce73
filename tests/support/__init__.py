"""Test-only helpers (data builders); what the benchmarks share with the tests is in testkit."""
