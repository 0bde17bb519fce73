"""Test-only helpers: real services, template databases, worker processes, data builders."""
