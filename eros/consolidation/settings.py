"""Consolidation's settings (docs/consolidation.md): its section of
:class:`eros.settings.Settings`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ConsolidationSettings(BaseSettings):
    """CONSOLIDATION_* variables. Field ``foo_bar`` is read from the variable ``FOO_BAR``."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    # --- consolidation (docs/consolidation.md) -------------------------------------------
    #: seconds between two runs of the finder (beat); each run enqueues at most
    #: CONSOLIDATION_BATCH users.
    consolidation_interval_secs: int = Field(default=3600, ge=1)
    #: θ: two memories of one layer and category are near duplicates when their cosine
    #: similarity is at least this. Untuned: contradictions ("lives in Shanghai" / "moved to
    #: Tokyo") are less alike than paraphrases, so a lower θ finds more supersessions at the
    #: price of larger clusters for the model to sort out.
    consolidation_similarity: float = Field(default=0.85, gt=0, le=1)
    #: a user is consolidated when this share of their current memories has a near twin
    #: (and something is new since the last pass); 0 = whenever anything is new.
    consolidation_min_near_dup_share: float = Field(default=0.1, ge=0, le=1)
    #: users enqueued per finder run (backpressure, like DREAMING_BATCH).
    consolidation_batch: int = Field(default=50, ge=1, le=10000)
    #: users whose share the finder measures per run (the ones waiting longest first).
    consolidation_scan_limit: int = Field(default=500, ge=1, le=100000)
    #: consecutive failed passes (unparseable reply, provider errors) before a user is parked;
    #: `eros consolidate USER` runs a parked user and un-parks it on success.
    consolidation_max_attempts: int = Field(default=5, ge=1, le=100)
    #: the model of the consolidation call; unset = DREAMING_MODEL.
    consolidation_model: str | None = None
    #: clusters per call (one call per user); the rest wait for the next pass.
    consolidation_max_clusters: int = Field(default=30, ge=1, le=500)
    #: members shown per cluster (the newest); older ones wait for the next pass.
    consolidation_max_cluster_size: int = Field(default=12, ge=2, le=100)
    #: max_tokens of the consolidation reply.
    consolidation_max_tokens: int = Field(default=4000, ge=64)
    #: new (not yet compared) memories one pass compares with their neighbours; a larger
    #: backlog is worked through in chunks over several passes.
    consolidation_chunk_size: int = Field(default=500, ge=1, le=100000)
    #: users with more current memories than this are searched through the binary sketches
    #: (a Hamming prefilter, then the exact check); up to it, exactly.
    consolidation_exact_below: int = Field(default=2000, ge=0)
    #: users with no recall cells and more current memories than this are searched through
    #: the HNSW index instead (the k nearest per memory, an iterative scan). 0 = never (the
    #: default: a user above RECALL_CELL_MIN_ROWS is cut into cells by beat and
    #: searched in them; set above 0, `eros migrate` keeps the index this needs).
    consolidation_hnsw_above: int = Field(default=0, ge=0)
    #: k of the HNSW search: a near twin beyond a memory's k nearest is not found from it.
    consolidation_neighbours: int = Field(default=16, ge=1, le=1000)
    #: a user cut into recall cells is searched in each memory's this many nearest cells.
    consolidation_cell_probes: int = Field(default=8, ge=1, le=4096)
    #: new memories per user the finder searches to measure the share (its cost per user).
    consolidation_finder_sample: int = Field(default=200, ge=1, le=100000)
