"""One exception tree, ordered by what the caller should do about it.

Provider SDK errors are translated into these at the edge (``eros.providers``) so that the
Celery JSON result backend can carry them and so the retry decision is a plain ``isinstance``.
"""

from __future__ import annotations


class ErosError(Exception):
    """Something went wrong in eros."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class ConfigError(ErosError):
    """The configuration is invalid; fix the named environment variable and start again."""


class ServiceUnavailable(ErosError):
    """A required service (PostgreSQL or Redis) cannot be reached."""


class ProviderError(ErosError):
    """An LLM or embedding provider call failed."""

    provider: str = "provider"

    def __init__(self, message: str | None = None, *, provider: str = "provider",
                 status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class TransientError(ProviderError):
    """A network-level or overload failure: retry later with backoff."""

    def __init__(self, message: str | None = None, *, provider: str = "provider",
                 status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, provider=provider, status=status)
        #: seconds the provider asked us to wait (``Retry-After``), if it said.
        self.retry_after = retry_after

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_rebuild_transient, (str(self), self.provider, self.status, self.retry_after))


def _rebuild_transient(message: str, provider: str, status: int | None,
                       retry_after: float | None) -> TransientError:
    return TransientError(message, provider=provider, status=status, retry_after=retry_after)


class PermanentError(ProviderError):
    """The provider rejected the request (400/401/403/404/422, bad vector size): do not retry."""


class ClaimLost(ErosError):
    """This task's claim on the session was taken over by another worker; it must not write."""


class RecallError(ErosError):
    """A recall request is invalid (unknown scope or strategy, missing instance, bad vector)."""
