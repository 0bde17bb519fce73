"""What the tests and the benchmarks both stand on: real services (embedded PostgreSQL, Redis,
PgBouncer, a streaming replica, RabbitMQ), real worker processes, the local fake provider APIs,
the chaos harness and the red-team corpus.

``tests`` and ``bench`` import it; it imports neither (import-linter checks it). It is not
shipped in the wheel. Helpers only the tests use stay in ``tests/support``.
"""
