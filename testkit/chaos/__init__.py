"""The chaos harness: a real stack of PostgreSQL, Redis, fake providers, beat and workers that
a scenario disrupts while sessions drain (tests/chaos runs it; bench/cold_fleet_bench.py too)."""
