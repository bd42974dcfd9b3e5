"""Queued pools get their nodes through Kueue's ProvisioningRequest admission check, and
Kueue and JobSet stay where they belong (issue 20, items 2 and 7).

Every object is checked against Kueue v0.19.2's published CRD schemas (v1beta2, made strict;
tests/components/data, each with its source). References:
- GoogleCloudPlatform/cluster-toolkit@1047080375afbb44da4b596be314634e7486af4a:
  examples/gke-consumption-options/dws-flex-start-queued-provisioning/dws-queues.yaml.tftpl and
  tpu-dws-queues.yaml.tftpl (AdmissionCheck + ProvisioningRequestConfig, class
  queued-provisioning.gke.io, managedResources, TPU `tpu-topology`);
- AI-Hypercomputer/xpk@367c838253bea41e7d7716145ad6513f44c1a21e:
  src/xpk/templates/kueue_config.yaml.j2 (podSetUpdates by ResizeRequestName) and
  src/xpk/core/kueue_manager.py (controller memory: 32 MiB per node, at least 4 GiB);
- kubernetes-sigs/kueue@8eab68778fc1b52affe165fdf5af29d1e9b4f3cb (v0.19.2):
  charts/kueue/templates/webhook/manifests.yaml (`mpod.kb.io` fails closed; its
  namespaceSelector is the config's managedJobsNamespaceSelector, else all but kube-system and
  kueue-system), charts/kueue/values.yaml (controller 512Mi).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from components.engine.plan import Plan, run_plan
from components.k8s import kueue_objects
from components.k8s._kueue import (
    MANAGER_CONFIG,
    QUEUED_PROVISIONING_CLASS,
    kueue_controller_values,
)
from fleet import load_fleet
from fleet.inventory import SMOKE_QUEUE, build_inventory
from fleet.model import POOL_LABEL, SYSTEM_POOL
from fleet.routing import ClusterRouting, fleet_routing
from tests.plan_tree import cluster_of
from tests.schemas import strict
from tests.stacks import ONE_GKE_CLUSTER

DATA = Path(__file__).parent / "data"
PLURALS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues",
           "LocalQueue": "localqueues", "Cohort": "cohorts",
           "AdmissionCheck": "admissionchecks",
           "ProvisioningRequestConfig": "provisioningrequestconfigs"}
K8S_VERSION = "1.33"
RELEASE = "kubernetes:helm.sh/v3:Release"
STACK = ONE_GKE_CLUSTER + """\
      - {name: vision}
    smoke:
      namespace: smoke-test
    routing:
      teams:
        - {team: vision, prefer: [v6e-q, l4]}
    pools:
      - {name: h100-q, cluster: c1, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a, capacity: queued}
      - {name: l4, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 1,
         zone: us-central1-a}
      - {name: v6e-q, cluster: c1, team: vision, accelerator: v6e, topology: 4x4,
         zone: us-central1-a, capacity: queued}
"""


def go_patterns(schema: Any) -> Any:
    """The CRDs' patterns are Go (RE2) regular expressions: RE2 takes a flag group after `^`
    (`^(?i)[a-z]...`, AdmissionCheck's parameters.kind), Python only at the start."""
    if isinstance(schema, list):
        return [go_patterns(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: go_patterns(v) for k, v in schema.items()}
    if isinstance(out.get("pattern"), str) and out["pattern"].startswith("^(?i)"):
        out["pattern"] = "(?i)^" + out["pattern"][len("^(?i)"):]
    return out


def validator(kind: str) -> jsonschema.Draft7Validator:
    data = json.loads((DATA / f"kueue.x-k8s.io_{PLURALS[kind]}-v0.19.2.json").read_text())
    assert "v0.19.2" in data["source"] and "v1beta2" in data["source"]
    return jsonschema.Draft7Validator(strict(go_patterns(data["openAPIV3Schema"])))


def errors(obj: dict[str, Any]) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}"
            for e in validator(obj["kind"]).iter_errors(obj)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("queued") / "Pulumi.queued.yaml"
    path.write_text(STACK, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def routing(stack: Path) -> ClusterRouting:
    [r] = fleet_routing(load_fleet(str(stack)))
    return r


@pytest.fixture(scope="module")
def plan(stack: Path) -> Plan:
    return run_plan(stack)


def by_kind(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


# -- item 2: the ProvisioningRequest admission check ---------------------------------------------
def test_queued_pools_get_a_provisioning_request_check_each(routing: ClusterRouting) -> None:
    objs = kueue_objects(routing)
    for obj in objs:
        if obj["kind"] == "Namespace":
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        else:
            assert errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
    configs = by_kind(objs, "ProvisioningRequestConfig")
    checks = by_kind(objs, "AdmissionCheck")
    assert sorted(configs) == sorted(checks) == ["h100-q-dws", "v6e-q-dws"]  # not l4
    for name, check in checks.items():
        assert check["spec"] == {"controllerName": "kueue.x-k8s.io/provisioning-request",
                                 "parameters": {"apiGroup": "kueue.x-k8s.io",
                                                "kind": "ProvisioningRequestConfig",
                                                "name": name}}
    gpu, tpu = configs["h100-q-dws"]["spec"], configs["v6e-q-dws"]["spec"]
    assert gpu["provisioningClassName"] == tpu["provisioningClassName"] == (
        QUEUED_PROVISIONING_CLASS) == "queued-provisioning.gke.io"
    assert gpu["managedResources"] == ["nvidia.com/gpu"]
    assert tpu["managedResources"] == ["google.com/tpu"]
    assert tpu["parameters"] == {"tpu-topology": "4x4"} and "parameters" not in gpu
    for spec in (gpu, tpu):  # admitted pods select the nodes of their own request (xpk)
        assert spec["podSetUpdates"] == {"nodeSelector": [{
            "key": "autoscaling.gke.io/provisioning-request",
            "valueFromProvisioningClassDetail": "ResizeRequestName"}]}


def test_the_check_applies_to_the_queued_flavors_of_each_queue_only(
        routing: ClusterRouting) -> None:
    queues = by_kind(kueue_objects(routing), "ClusterQueue")
    strategy = {n: q["spec"].get("admissionChecksStrategy") for n, q in queues.items()}
    assert strategy["research"] == {"admissionChecks": [
        {"name": "h100-q-dws", "onFlavors": ["h100-q"]}]}  # l4 is not gated
    assert strategy["vision"] == {"admissionChecks": [
        {"name": "v6e-q-dws", "onFlavors": ["v6e-q"]}]}
    assert strategy[SMOKE_QUEUE] == {"admissionChecks": [
        {"name": "h100-q-dws", "onFlavors": ["h100-q"]},
        {"name": "v6e-q-dws", "onFlavors": ["v6e-q"]}]}


def test_v1beta2_queues_refuse_the_v1beta1_admission_checks_field(
        routing: ClusterRouting) -> None:
    """Cluster Toolkit's dws-queues template writes `spec.admissionChecks` under
    kueue.x-k8s.io/v1beta2; the v0.19.2 CRD has only `admissionChecksStrategy` there."""
    cq = copy.deepcopy(by_kind(kueue_objects(routing), "ClusterQueue")["research"])
    cq["spec"]["admissionChecks"] = ["h100-q-dws"]
    assert errors(cq)
    bad = copy.deepcopy(by_kind(kueue_objects(routing), "ProvisioningRequestConfig")[
        "v6e-q-dws"])
    bad["spec"]["podSetUpdates"]["nodeSelector"][0]["valueFrom"] = "x"
    assert errors(bad)


def test_smoke_has_a_queue_in_its_namespace_for_the_queued_pools(
        routing: ClusterRouting, stack: Path) -> None:
    objs = kueue_objects(routing)
    lq = by_kind(objs, "LocalQueue")[SMOKE_QUEUE]
    assert lq["metadata"]["namespace"] == "smoke-test"
    assert lq["spec"] == {"clusterQueue": SMOKE_QUEUE}
    cq = by_kind(objs, "ClusterQueue")[SMOKE_QUEUE]["spec"]
    assert cq["namespaceSelector"] == {"matchLabels": {
        "kubernetes.io/metadata.name": "smoke-test"}}
    [group] = cq["resourceGroups"]
    assert [f["name"] for f in group["flavors"]] == ["h100-q", "v6e-q"]
    assert "smoke-test" in {o["metadata"]["name"] for o in objs if o["kind"] == "Namespace"}
    inv = build_inventory(load_fleet(str(stack)), "queued")
    assert {p.name: p.kueue_queue for p in inv.pools} == {
        "h100-q": SMOKE_QUEUE, "l4": None, "v6e-q": SMOKE_QUEUE}


def test_the_plan_applies_checks_before_the_queues_that_name_them(plan: Plan) -> None:
    by_urn = plan.by_urn()
    kueue = [r for r in plan.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")
             and "accelfleet:k8s:KueueQueues$" in r.urn]  # the gate's: test_gate_component
    kinds = {r.inputs["kind"] for r in kueue}
    assert {"AdmissionCheck", "ProvisioningRequestConfig"} <= kinds
    for r in kueue:
        obj = {k: r.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}
        assert errors(obj) == [], r.name
        if r.inputs["kind"] == "ClusterQueue" and "admissionChecksStrategy" in r.inputs["spec"]:
            waits = {by_urn[d].name for d in r.dependencies if d in by_urn}
            for check in r.inputs["spec"]["admissionChecksStrategy"]["admissionChecks"]:
                assert f"c1-queues-admissioncheck-{check['name']}" in waits


# -- item 7: Kueue's size and reach, JobSet's place, the webhook rule's targets -------------------
def test_kueue_controller_is_sized_by_nodes_as_xpk_does() -> None:
    def resources(nodes: int) -> dict[str, Any]:
        values = kueue_controller_values("r", "t", {}, nodes=nodes)
        return dict(values["controllerManager"]["manager"]["resources"])

    assert resources(3)["limits"] == {"cpu": "2", "memory": "4096Mi"}  # not the chart's 512Mi
    assert resources(1000) == {"requests": {"cpu": "4", "memory": "32000Mi"},
                               "limits": {"cpu": "4", "memory": "32000Mi"}}


def test_kueue_webhooks_see_only_the_namespaces_it_manages(plan: Plan) -> None:
    [release] = [r for r in plan.of_type(RELEASE)
                 if r.inputs["chart"].endswith("/kueue") and cluster_of(plan, r) == "c1"]
    values = release.inputs["values"]
    config = json.loads(values["managerConfig"]["controllerManagerConfigYaml"])
    # the chart's own configuration, unchanged but for the selector
    assert {k: v for k, v in config.items() if k != "managedJobsNamespaceSelector"} == (
        MANAGER_CONFIG)
    selector = config["managedJobsNamespaceSelector"]
    assert selector == {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                              "operator": "In",
                                              "values": ["research", "smoke-test", "vision"]}]}
    # as the chart renders it into mpod.kb.io: a valid webhook for Kubernetes 1.33
    webhook = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingWebhookConfiguration", "metadata": {"name": "kueue"},
               "webhooks": [{"name": "mpod.kb.io", "admissionReviewVersions": ["v1"],
                             "clientConfig": {"service": {"name": "kueue-webhook-service",
                                                          "namespace": "kueue-system",
                                                          "path": "/mutate--v1-pod"}},
                             "failurePolicy": "Fail", "sideEffects": "None",
                             "namespaceSelector": selector}]}
    kubernetes_validate.validate(webhook, K8S_VERSION, strict=True)
    resources = values["controllerManager"]["manager"]["resources"]
    assert resources["requests"]["memory"] == "4096Mi"


def test_jobset_controller_stays_on_the_system_pool(plan: Plan) -> None:
    [release] = [r for r in plan.of_type(RELEASE) if r.inputs["chart"].endswith("/jobset")]
    assert release.inputs["values"]["controller"]["nodeSelector"] == {POOL_LABEL: SYSTEM_POOL}


def test_the_webhook_firewall_rule_targets_the_cluster_nodes_only(plan: Plan) -> None:
    [rule] = [r for r in plan.of_type("gcp:compute/firewall:Firewall")
              if r.name == "c1-webhooks"]
    [account] = rule.inputs["targetServiceAccounts"]
    pools = [r for r in plan.of_type("gcp:container/nodePool:NodePool")]
    assert pools and all(p.inputs["nodeConfig"]["serviceAccount"] == account for p in pools)


def test_a_queued_pool_is_counted_once_between_the_teams_and_smoke(
        routing: ClusterRouting) -> None:
    """Issue 27 item 9: the smoke queue held each queued pool's whole quota again, outside
    the cohort, so Kueue could admit twice the pool (the extra ProvisioningRequests wait).
    Now it joins the cohort, owns nothing and borrows at most the pool: what every queue
    of the cohort can be admitted on a flavor together is the pool, once."""
    objs = kueue_objects(routing)
    queues = [o["spec"] for o in objs if o["kind"] == "ClusterQueue"]
    smoke = by_kind(objs, "ClusterQueue")[SMOKE_QUEUE]["spec"]
    assert smoke["cohortName"] == routing.cohort
    for flavor in routing.queued:
        nominal: dict[str, int] = {}
        for cq in queues:
            assert cq.get("cohortName") == routing.cohort
            for group in cq["resourceGroups"]:
                for f in group["flavors"]:
                    if f["name"] != flavor.name:
                        continue
                    for r in f["resources"]:
                        nominal[r["name"]] = nominal.get(r["name"], 0) + amount(
                            r["name"], r["nominalQuota"])
                        if cq is smoke:
                            assert r["nominalQuota"] == "0"
                            assert amount(r["name"], r["borrowingLimit"]) == \
                                flavor.quota.get(r["name"], 0)
        held = {r: v for r, v in nominal.items() if v}
        assert held == {r: v for r, v in flavor.quota.items() if v}, flavor.name


def amount(resource: str, text: str) -> int:
    """A quantity as fleet.routing writes it, back in its units (millicores, MiB, count)."""
    if text.endswith("Gi"):
        return int(text[:-2]) * 1024
    if text.endswith("Mi"):
        return int(text[:-2])
    if text.endswith("m"):
        return int(text[:-1])
    return int(text) * 1000 if resource == "cpu" else int(text)
