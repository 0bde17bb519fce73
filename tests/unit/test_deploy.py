"""The sample Prometheus config and alert rules parse and only use metrics eros exports."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
EXPORTED = {
    # eros.ops.metrics counters (the client adds _total), histograms (_bucket/_count/_sum)
    "eros_claimed_sessions_total", "eros_claim_ticks_total", "eros_claimed_per_tick_bucket",
    "eros_classify_outcomes_total", "eros_retries_total", "eros_dead_letters_total",
    "eros_throttled_total", "eros_llm_latency_seconds_bucket",
    "eros_embedding_latency_seconds_bucket", "eros_tokens_total", "eros_cost_usd_total",
    "eros_memories_written_total", "eros_erasures_total", "eros_erasures_failed_total",
    "eros_retention_deleted_total",
    # database gauges read at scrape time
    "eros_backlog_sessions", "eros_backlog_oldest_age_seconds", "eros_in_flight_sessions",
    "eros_dead_lettered_sessions",
}


def test_scrape_config_loads_the_rules_file() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    assert config["rule_files"] == ["eros-alerts.yml"]
    assert (DEPLOY / "eros-alerts.yml").exists()
    assert config["scrape_configs"][0]["job_name"] == "eros-worker"


def test_alert_rules_reference_only_exported_metrics() -> None:
    rules = yaml.safe_load((DEPLOY / "eros-alerts.yml").read_text())["groups"][0]["rules"]
    assert {r["alert"] for r in rules} >= {"ErosNoWorkers", "ErosBacklogAgeHigh",
                                           "ErosDeadLetters"}
    for rule in rules:
        for name in re.findall(r"\beros_[a-z_]+", rule["expr"]):
            assert name in EXPORTED, f"{rule['alert']} uses unknown metric {name}"


def test_the_list_above_matches_what_eros_exports() -> None:
    from eros.dreaming.services import gauges
    from eros.ops import metrics

    families = {m._name for m in metrics.all_metrics()}
    database_gauges = {"eros_backlog_sessions", "eros_backlog_oldest_age_seconds",
              "eros_in_flight_sessions", "eros_dead_lettered_sessions"}
    for name in EXPORTED - database_gauges:
        assert re.sub(r"_(total|bucket|count|sum)$", "", name) in families, name
    source = Path(gauges.__file__).read_text()  # read from the database at scrape time
    assert all(f'"{g}"' in source for g in database_gauges)
