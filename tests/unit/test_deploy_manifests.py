"""deploy/kubernetes/ validated offline: the core kinds against Kubernetes' own schemas
(``kubernetes-validate``, strict: an unknown field is an error), KEDA's ScaledObject and
TriggerAuthentication against the CRDs' openAPIV3Schema (deploy/kubernetes/schemas/, made
strict the same way) with ``jsonschema``, and what the schemas cannot say: the workers consume
the queues KEDA watches, probes run ``eros health``, the grace period covers the hard time
limit, beat is one replica, each worker kind has a disruption budget and a ScaledObject in both
broker variants."""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")
kubernetes_validate = pytest.importorskip("kubernetes_validate.utils")
jsonschema = pytest.importorskip("jsonschema")

from eros.devstack.workers import CLASSIFY_CONCURRENCY, CLASSIFY_HOSTNAME  # noqa: E402
from eros.settings import HARD_LIMIT_FRACTION, SOFT_LIMIT_FRACTION, Settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
SCHEMAS = K8S / "schemas"
KUBERNETES_VERSION = "1.30"
WORKER_KINDS = ("eros-worker", "eros-classify")


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _all() -> dict[Path, list[dict[str, Any]]]:
    files = sorted(K8S.glob("*.yaml")) + sorted((K8S / "keda").glob("*.yaml"))
    return {f: _documents(f) for f in files}


def _strict(schema: Any) -> Any:
    """Forbid unknown fields wherever the CRD lists the properties (what kubernetes-validate's
    strict mode does for the core schemas); maps of free keys keep their own rule."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (out.get("type") == "object" and "properties" in out
                and "additionalProperties" not in out
                and not out.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _keda_validator(kind: str) -> Any:
    name = {"ScaledObject": "scaledobject", "TriggerAuthentication": "triggerauthentication"}
    schema = json.loads((SCHEMAS / f"keda-{name[kind]}-v1alpha1.json").read_text())
    return jsonschema.Draft7Validator(_strict(schema))


def _validate(doc: dict[str, Any]) -> None:
    """Raise if ``doc`` breaks its schema."""
    if doc["apiVersion"].startswith("keda.sh/"):
        assert doc["apiVersion"] == "keda.sh/v1alpha1"
        _keda_validator(doc["kind"]).validate(doc)
    else:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def _by_kind(kind: str, docs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    found = docs if docs is not None else [d for ds in _all().values() for d in ds]
    return [d for d in found if d["kind"] == kind]


def _deployment(name: str) -> dict[str, Any]:
    return next(d for d in _by_kind("Deployment") if d["metadata"]["name"] == name)


def _container(name: str) -> dict[str, Any]:
    containers = _deployment(name)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def _command_line(container: dict[str, Any]) -> list[str]:
    words = [*container.get("command", []), *container.get("args", [])]
    if words[:2] == ["sh", "-c"]:
        words = shlex.split(" ".join(words[2:]))
    return [w for w in words if w != "exec"]


def _consumed_queues(name: str) -> set[str]:
    line = _command_line(_container(name))
    queues = [w.split("=", 1)[1] for w in line if w.startswith("--queues=")]
    assert len(queues) == 1, line
    return set(queues[0].split(","))


def test_every_manifest_passes_its_schema() -> None:
    checked = 0
    for path, docs in _all().items():
        for doc in docs:
            try:
                _validate(doc)
            except Exception as err:  # name the file and the object in the failure
                pytest.fail(f"{path.relative_to(ROOT)} {doc['kind']} "
                            f"{doc['metadata']['name']}: {err}")
            checked += 1
    kinds = {d["kind"] for ds in _all().values() for d in ds}
    assert {"Deployment", "PodDisruptionBudget", "ScaledObject", "TriggerAuthentication",
            "ConfigMap", "Secret"} <= kinds
    assert checked >= 12


@pytest.mark.parametrize("kind", ["Deployment", "ScaledObject", "TriggerAuthentication"])
def test_the_validators_reject_a_broken_manifest(kind: str) -> None:
    """The schemas really bite: an unknown field and a wrongly typed one are errors."""
    doc = copy.deepcopy(_by_kind(kind)[0])
    doc["spec"]["replicaCount"] = 3  # a field no version of these kinds has
    with pytest.raises(Exception, match="replicaCount"):
        _validate(doc)
    doc = copy.deepcopy(_by_kind(kind)[0])
    key = {"Deployment": "replicas", "ScaledObject": "maxReplicaCount",
           "TriggerAuthentication": "secretTargetRef"}[kind]
    doc["spec"][key] = "many"
    with pytest.raises(Exception, match="many"):
        _validate(doc)


def test_workers_and_beat_run_eros_and_probe_with_eros_health() -> None:
    for name in (*WORKER_KINDS, "eros-beat"):
        container = _container(name)
        line = _command_line(container)
        assert line[:2] in (["eros", "worker"], ["eros", "beat"]), line
        probe = container["livenessProbe"]["exec"]["command"]
        probe_line = shlex.split(probe[-1]) if probe[:2] == ["sh", "-c"] else probe
        assert probe_line[:2] == ["eros", "health"], probe
    for name in WORKER_KINDS:
        container = _container(name)
        assert container["readinessProbe"]["exec"]["command"] == ["eros", "health"]
        line = _command_line(container)
        hostname = next(w.split("=", 1)[1] for w in line if w.startswith("--hostname="))
        liveness = container["livenessProbe"]["exec"]["command"][-1]
        assert f"--worker {hostname.replace('${HOSTNAME}', '$HOSTNAME')}" in liveness
    assert "--beat" in _container("eros-beat")["livenessProbe"]["exec"]["command"]
    assert "--pool=gevent" in _command_line(_container("eros-classify"))
    assert "--pool=prefork" in _command_line(_container("eros-worker"))


def test_the_classify_deployment_sizes_and_names_its_worker_as_the_procfile_does() -> None:
    line = _command_line(_container("eros-classify"))
    assert f"--concurrency={CLASSIFY_CONCURRENCY}" in line
    assert f"--hostname={CLASSIFY_HOSTNAME.replace('%h', '${HOSTNAME}')}" in line


def test_grace_period_covers_the_time_limits_of_the_configured_claim_window() -> None:
    config = _by_kind("ConfigMap")[0]["data"]
    stale = int(config["DREAMING_CLAIM_STALE_SECS"])
    Settings(dreaming_claim_stale_secs=stale)  # a value the workers accept
    for name in WORKER_KINDS:
        grace = _deployment(name)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace > stale * HARD_LIMIT_FRACTION > stale * SOFT_LIMIT_FRACTION, name
        assert grace < stale, f"{name}: a pod outliving its claims' window"


def test_beat_is_one_replica_replaced_not_rolled() -> None:
    beat = _deployment("eros-beat")
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"]["type"] == "Recreate"
    assert not _by_kind("ScaledObject") or all(
        s["spec"]["scaleTargetRef"]["name"] != "eros-beat" for s in _by_kind("ScaledObject"))


def test_each_worker_kind_has_a_disruption_budget_selecting_its_pods() -> None:
    budgets = _by_kind("PodDisruptionBudget")
    for name in WORKER_KINDS:
        labels = _deployment(name)["spec"]["template"]["metadata"]["labels"]
        matching = [b for b in budgets
                    if b["spec"]["selector"]["matchLabels"].items() <= labels.items()]
        assert len(matching) == 1, name
        assert matching[0]["spec"]["maxUnavailable"] == 1


def test_selectors_do_not_overlap_and_match_their_templates() -> None:
    deployments = _by_kind("Deployment")
    for d in deployments:
        selector = d["spec"]["selector"]["matchLabels"].items()
        assert selector <= d["spec"]["template"]["metadata"]["labels"].items()
        for other in deployments:
            if other is not d:
                assert not selector <= other["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize("variant,trigger", [("redis", "redis"), ("rabbitmq", "rabbitmq")])
def test_keda_scales_each_worker_kind_on_the_queues_it_consumes(variant: str,
                                                                trigger: str) -> None:
    docs = _documents(K8S / "keda" / f"{variant}.yaml")
    rules = json.loads((SCHEMAS / "keda-trigger-metadata.json").read_text())[trigger]
    secret = _by_kind("Secret")[0]["stringData"]
    auths = {a["metadata"]["name"]: a for a in _by_kind("TriggerAuthentication", docs)}
    for auth in auths.values():
        for ref in auth["spec"]["secretTargetRef"]:
            assert ref["name"] == "eros-secrets" and ref["key"] in secret, ref
            assert ref["parameter"] in rules["auth_params"], ref
    scaled = {s["spec"]["scaleTargetRef"]["name"]: s for s in _by_kind("ScaledObject", docs)}
    assert set(scaled) == set(WORKER_KINDS)
    known = set(Settings().model_dump(include={"eros_claim_queue", "eros_classify_queue",
                                               "eros_consolidate_queue",
                                               "eros_recall_queue"}).values())
    for name, obj in scaled.items():
        assert obj["spec"]["minReplicaCount"] >= 1, "the claim and classify queues need a worker"
        watched = set()
        for t in obj["spec"]["triggers"]:
            assert t["type"] == trigger
            assert t["authenticationRef"]["name"] in auths
            meta = t["metadata"]
            assert set(meta) <= set(rules["allowed"]), set(meta) - set(rules["allowed"])
            assert all(isinstance(v, str) for v in meta.values()), meta
            assert set(rules["required"]) <= set(meta)
            for group in rules["one_of"]:
                assert set(group) & set(meta), group
            for key, values in rules.get("enums", {}).items():
                assert key not in meta or meta[key] in values, (key, meta[key])
            watched.add(meta["listName" if trigger == "redis" else "queueName"])
        assert watched <= _consumed_queues(name) and watched <= known, (name, watched)
    # the claim queue is the prefork worker's, never scaled to zero
    assert "eros.claim" in _consumed_queues("eros-worker")
