"""Typed configuration from environment variables, built once at the edge and passed down.

Variable names are the reference implementation's so deployments can migrate unchanged. Every
invalid value stops start-up with a :class:`~eros.errors.ConfigError` naming the variable.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from eros.errors import ConfigError

Providers = Literal["auto", "live", "offline"]


class Settings(BaseSettings):
    """All of eros's knobs. Field ``foo_bar`` is read from the variable ``FOO_BAR``."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    # --- services -------------------------------------------------------------------------
    database_url: str | None = None
    redis_url: str | None = None

    # --- providers ------------------------------------------------------------------------
    #: ``live`` needs both keys; ``offline`` uses the heuristic extractor and the hash
    #: embedder; ``auto`` picks offline for whichever key is missing.
    eros_providers: Providers = "auto"
    openrouter_api_key: str | None = Field(default=None, repr=False)
    openrouter_base_url: str = "https://openrouter.ai/api/v1"
    dreaming_model: str = "anthropic/claude-haiku-4.5"
    voyage_api_key: str | None = Field(default=None, repr=False)
    voyage_base_url: str | None = None
    embedding_model: str = "voyage-3.5-lite"
    embedding_dim: int = Field(default=512, ge=1, le=16000)
    llm_timeout_secs: float = Field(default=60.0, gt=0)
    embedding_timeout_secs: float = Field(default=30.0, gt=0)
    #: retries inside the SDK for one task attempt (the SDKs honour Retry-After themselves).
    provider_max_retries: int = Field(default=1, ge=0, le=10)

    # --- dreaming -------------------------------------------------------------------------
    dreaming_disabled: bool = False
    dreaming_tick_secs: int = Field(default=300, ge=1)
    dreaming_idle_secs: int = Field(default=1800, ge=0)
    dreaming_claim_stale_secs: int = Field(default=600, ge=10)
    dreaming_batch: int = Field(default=100, ge=1, le=10000)
    dreaming_max_attempts: int = Field(default=5, ge=1, le=100)
    dreaming_max_tokens: int = Field(default=1500, ge=64)
    #: the larger limit of the single retry after a reply cut off at ``max_tokens``.
    dreaming_truncation_retry_tokens: int = Field(default=4000, ge=64)
    #: characters of transcript sent to the model; older turns beyond it are trimmed.
    dreaming_transcript_budget_chars: int = Field(default=48000, ge=500)
    dreaming_max_memories: int = Field(default=10, ge=1, le=50)
    dreaming_prompt_file: Path | None = None
    dreaming_retry_backoff_secs: float = Field(default=5.0, gt=0)
    dreaming_retry_backoff_max_secs: float = Field(default=240.0, gt=0)
    #: path of a beat schedule file in the format of ``celerybeat-schedule.example``.
    dreaming_beat_schedule: Path | None = None

    # --- worker ---------------------------------------------------------------------------
    eros_claim_queue: str = "eros.claim"
    eros_classify_queue: str = "eros.classify"
    #: Redis visibility timeout; must stay well above the longest retry countdown.
    eros_visibility_timeout_secs: int = Field(default=3600, ge=60)
    eros_log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @field_validator("database_url")
    @classmethod
    def _psycopg_driver(cls, value: str | None) -> str | None:
        """Accept ``postgres://`` and ``postgresql://`` URLs; SQLAlchemy needs the driver."""
        if value is None or value == "":
            return None
        for prefix in ("postgres://", "postgresql://"):
            if value.startswith(prefix):
                return "postgresql+psycopg://" + value[len(prefix):]
        if not value.startswith("postgresql+psycopg://"):
            raise ValueError("must be a postgresql:// URL")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_scheme(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("redis://", "rediss://", "redis+socket://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or redis+socket:// URL")
        return value

    @field_validator("dreaming_prompt_file")
    @classmethod
    def _prompt_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"file {value} does not exist")
        return value

    @model_validator(mode="after")
    def _windows_fit(self) -> Settings:
        """A hung call or a retry countdown must never outlive the claim it runs under."""
        http_worst = (self.llm_timeout_secs * 2 + self.embedding_timeout_secs) * (
            self.provider_max_retries + 1)
        if http_worst >= self.dreaming_claim_stale_secs:
            raise ValueError(
                f"DREAMING_CLAIM_STALE_SECS ({self.dreaming_claim_stale_secs}) must exceed the "
                f"worst-case HTTP time of one attempt ({http_worst:.0f}s from LLM_TIMEOUT_SECS, "
                "EMBEDDING_TIMEOUT_SECS and PROVIDER_MAX_RETRIES)")
        if self.dreaming_retry_backoff_max_secs >= self.dreaming_claim_stale_secs / 2:
            raise ValueError(
                "DREAMING_RETRY_BACKOFF_MAX_SECS must be below half of DREAMING_CLAIM_STALE_SECS")
        if self.dreaming_claim_stale_secs * 2 >= self.eros_visibility_timeout_secs:
            raise ValueError(
                "EROS_VISIBILITY_TIMEOUT_SECS must be more than twice DREAMING_CLAIM_STALE_SECS")
        if self.eros_providers == "live" and not (self.openrouter_api_key and self.voyage_api_key):
            missing = "OPENROUTER_API_KEY" if not self.openrouter_api_key else "VOYAGE_API_KEY"
            raise ValueError(f"EROS_PROVIDERS=live needs {missing}")
        return self

    # --- derived --------------------------------------------------------------------------
    @property
    def llm_is_offline(self) -> bool:
        return self.eros_providers == "offline" or not self.openrouter_api_key

    @property
    def embedder_is_offline(self) -> bool:
        return self.eros_providers == "offline" or not self.voyage_api_key

    def require_database_url(self) -> str:
        if not self.database_url:
            raise ConfigError("DATABASE_URL is not set (e.g. postgresql://user@host/db); "
                              "`eros run` starts an embedded PostgreSQL when it is unset")
        return self.database_url

    def require_redis_url(self) -> str:
        if not self.redis_url:
            raise ConfigError("REDIS_URL is not set (e.g. redis://127.0.0.1:6379/0); "
                              "`eros run` starts an embedded Redis when it is unset")
        return self.redis_url


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        name = loc.upper() if loc else "configuration"
        msg = e["msg"].removeprefix("Value error, ")
        parts.append(f"{name}: {msg}" if loc else msg)
    return "invalid configuration: " + "; ".join(parts)


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment (plus explicit overrides), or raise ConfigError."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as err:
        raise ConfigError(_describe(err)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()
