"""The development stack behind ``eros run``: embedded PostgreSQL (pgvector) and Redis, and
process supervision. Needs the ``embedded`` extra (``pip install 'eros[embedded]'``)."""
