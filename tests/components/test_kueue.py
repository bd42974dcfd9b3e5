"""Kueue on every cluster: the pinned controller release, and the fleet's routing as Kueue
objects, each checked against Kueue v0.19.2's published CRD schema (v1beta2, shipped in
tests/components/data with the descriptions removed) made strict, and against the rules the
CRDs state as CEL (checked here by hand)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from cli.plan import render
from components.engine.plan import Plan, PlannedResource, run_plan
from components.k8s import (
    KUEUE,
    KUEUE_IMAGE_REPOSITORY,
    KUEUE_IMAGE_TAG,
    kueue_controller_values,
    kueue_objects,
    scheduling_pod,
)
from fleet import load_fleet
from fleet.model import POOL_LABEL, SYSTEM_POOL
from fleet.routing import fleet_routing
from fleet.stack.read import EXAMPLE_STACK
from tests.plan_tree import cluster_of
from tests.plans import planned
from tests.schemas import strict

DATA = Path(__file__).parent / "data"
KINDS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues",
         "LocalQueue": "localqueues", "Cohort": "cohorts"}
RELEASE = "kubernetes:helm.sh/v3:Release"
KUEUE_TYPE = "kubernetes:kueue.x-k8s.io/v1beta2:"
OCI_REF = "oci://registry.k8s.io/kueue/charts/kueue"
K8S_VERSION = "1.33"


def routing_objects(plan: Plan) -> list[Any]:
    """The Kueue objects of the clusters' routing (the gate's WorkloadPriorityClass is
    tests/components/test_gate_component.py's)."""
    return [r for r in plan.resources if r.type.startswith(KUEUE_TYPE)
            and "accelfleet:k8s:KueueQueues$" in r.urn]


def validator(kind: str) -> jsonschema.Draft7Validator:
    data = json.loads((DATA / f"kueue.x-k8s.io_{KINDS[kind]}-v0.19.2.json").read_text())
    assert "v0.19.2" in data["source"] and "v1beta2" in data["source"]
    return jsonschema.Draft7Validator(strict(data["openAPIV3Schema"]))


def errors(obj: dict[str, Any]) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}"
            for e in validator(obj["kind"]).iter_errors(obj)]


def cel(obj: dict[str, Any]) -> list[str]:
    """The CRDs' x-kubernetes-validations that jsonschema cannot run, by hand."""
    out = []
    spec = obj["spec"]
    if obj["kind"] == "ClusterQueue":
        for rg in spec["resourceGroups"]:
            for f in rg["flavors"]:  # and Kueue's webhook: the same resources, in order
                if [r["name"] for r in f["resources"]] != rg["coveredResources"]:
                    out.append(f"{f['name']}: resources differ from coveredResources")
        if "cohortName" not in spec and any("borrowingLimit" in r for rg in spec[
                "resourceGroups"] for f in rg["flavors"] for r in f["resources"]):
            out.append("borrowingLimit without a cohort")
        fung = spec["flavorFungibility"]
        if "preference" in fung and set(fung.values()) - {"TryNextFlavor", fung["preference"]}:
            out.append("preference needs TryNextFlavor twice")
    if obj["kind"] == "ResourceFlavor":
        for t in spec.get("tolerations", []):
            if t.get("operator") == "Exists" and "value" in t:
                out.append("a value with Exists")
            if t.get("effect") not in (None, "NoSchedule", "PreferNoSchedule", "NoExecute"):
                out.append(f"effect {t['effect']}")
    return out


def manifest(r: PlannedResource) -> dict[str, Any]:
    return {k: r.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")
            if k in r.inputs}


@pytest.fixture(scope="module")
def plan() -> Plan:
    return planned(EXAMPLE_STACK)



# -- the controller -----------------------------------------------------------------------------
def test_both_clusters_get_one_pinned_kueue_release_on_the_system_pool(plan: Plan) -> None:
    releases = [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == OCI_REF]
    assert sorted(cluster_of(plan, r) for r in releases) == ["ml-eks", "ml-gke"]
    by_urn = plan.by_urn()
    for r in releases:
        i = r.inputs
        assert (i["version"], i["namespace"], i["name"]) == ("0.19.2", "kueue-system", "kueue")
        assert i["atomic"] is True and i["createNamespace"] is True
        manager = i["values"]["controllerManager"]
        assert manager["manager"]["image"] == {"repository": "registry.k8s.io/kueue/kueue",
                                               "tag": "v0.19.2", "pullPolicy": "IfNotPresent"}
        assert manager["nodeSelector"] == {POOL_LABEL: SYSTEM_POOL}
        assert "tolerations" not in manager  # never on a tainted accelerator node
        # it waits for the system pool's nodes, as the JobSet release does
        waits = [by_urn[d] for d in r.dependencies if d in by_urn]
        assert any(w.name.endswith("-system-pool") or w.name.endswith("-system-ng")
                   for w in waits), [w.name for w in waits]


def test_controller_values_fit_the_pod_spec_and_the_pin_is_exact() -> None:
    values = kueue_controller_values(KUEUE_IMAGE_REPOSITORY, KUEUE_IMAGE_TAG,
                                     {POOL_LABEL: SYSTEM_POOL})
    kubernetes_validate.validate(scheduling_pod(values["controllerManager"]), K8S_VERSION,
                                 strict=True)
    assert "nodeSelector" not in kueue_controller_values("r", "t", {})["controllerManager"]
    assert KUEUE.oci and KUEUE.ref == OCI_REF
    assert re.fullmatch(r"\d+\.\d+\.\d+", KUEUE.version)
    assert re.fullmatch(r"v\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?", KUEUE_IMAGE_TAG)
    assert KUEUE_IMAGE_TAG.split("@")[0] == f"v{KUEUE.version}"


def test_a_cluster_without_a_system_pool_selects_no_node(tmp_path: Path) -> None:
    text = EXAMPLE_STACK.read_text().replace(
        "        network:\n          cidr: 10.20.0.0/16\n",
        "        network:\n          cidr: 10.20.0.0/16\n        system_pool: {enabled: false}\n")
    assert "enabled: false}\n" in text
    path = tmp_path / "Pulumi.nosys.yaml"
    path.write_text(text)
    plan = run_plan(path)
    values = {cluster_of(plan, r): r.inputs["values"]["controllerManager"]
              for r in plan.of_type(RELEASE) if r.inputs["chart"] == OCI_REF}
    assert "nodeSelector" not in values["ml-eks"]
    assert values["ml-gke"]["nodeSelector"] == {POOL_LABEL: SYSTEM_POOL}


# -- the objects in the plan ----------------------------------------------------------------------
def test_every_kueue_object_passes_its_published_crd_schema(plan: Plan) -> None:
    objs = [manifest(r) for r in routing_objects(plan)]
    assert sorted({o["kind"] for o in objs}) == sorted(KINDS)
    for obj in objs:
        assert errors(obj) == [], obj["metadata"]["name"]
        assert cel(obj) == [], obj["metadata"]["name"]
    namespaces = [r for r in plan.resources if r.type == "kubernetes:core/v1:Namespace"
                  and "accelfleet:k8s:KueueQueues$" in r.urn]  # the gate's: test_gate_component
    assert len(namespaces) == 4
    for ns in namespaces:
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": ns.inputs["metadata"]}, K8S_VERSION,
                                     strict=True)


def test_the_schemas_arestrict() -> None:
    [routing, *_] = fleet_routing(load_fleet(str(EXAMPLE_STACK)))
    objs = {o["kind"]: o for o in kueue_objects(routing)}
    bad = copy.deepcopy(objs["ClusterQueue"])
    bad["spec"]["flavorFungibility"]["whenCanBorow"] = "TryNextFlavor"
    assert errors(bad)
    bad = copy.deepcopy(objs["ClusterQueue"])
    bad["spec"]["flavorFungibility"]["whenCanBorrow"] = "Borrow"  # v1beta1's, gone in v1beta2
    assert errors(bad)
    bad = copy.deepcopy(objs["ResourceFlavor"])
    bad["spec"]["nodeLabels"] = {f"example.com/l{i}": "x" for i in range(9)}
    assert errors(bad)
    bad = copy.deepcopy(objs["ClusterQueue"])
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"
    assert errors(bad)
    bad = copy.deepcopy(objs["ClusterQueue"])
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"].reverse()
    assert cel(bad)


def test_the_plan_shows_one_flavor_per_pool_and_one_queue_per_team(plan: Plan) -> None:
    objs = [(cluster_of(plan, r), manifest(r)) for r in routing_objects(plan)]
    flavors = {(c, o["metadata"]["name"]) for c, o in objs if o["kind"] == "ResourceFlavor"}
    fleet = load_fleet(str(EXAMPLE_STACK))
    assert flavors == {(p.spec.cluster, p.name) for p in fleet.pools}
    queues = {(c, o["metadata"]["name"]) for c, o in objs if o["kind"] == "ClusterQueue"}
    assert queues == {(c, t) for c in ("ml-gke", "ml-eks") for t in ("research", "vision")}
    cohorts = {(c, o["metadata"]["name"]) for c, o in objs if o["kind"] == "Cohort"}
    assert cohorts == {("ml-gke", "ml-gke"), ("ml-eks", "ml-eks")}


def test_the_queues_follow_routing_with_the_right_quota(plan: Plan) -> None:
    cqs = {(cluster_of(plan, r), r.inputs["metadata"]["name"]): r.inputs["spec"]
           for r in plan.resources if r.type == f"{KUEUE_TYPE}ClusterQueue"}
    vision = cqs[("ml-gke", "vision")]
    [group] = vision["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu",
                                         "google.com/tpu"]
    # `routing:` says v6e-serve first, then l4-spot
    assert [f["name"] for f in group["flavors"]] == ["v6e-serve", "l4-spot"]
    quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
             for f in group["flavors"]}
    # v6e 2x2: one ct6e-standard-4t (4 chips, 180 vCPUs, 720 GiB); l4-spot: g2-standard-24
    # (2 L4, 24 vCPUs, 96 GiB) at its autoscaling maximum of 4 nodes; what pods can get on
    # them (fleet/allocatable.py, GKE's reservations: tests/fleet/test_routing.py by hand),
    # and 180 GiB of each 200 GB boot disk
    assert quota == {
        "v6e-serve": {"cpu": "179042m", "memory": "715167Mi", "ephemeral-storage": "180Gi",
                      "nvidia.com/gpu": "0", "google.com/tpu": "4"},
        "l4-spot": {"cpu": "93128m", "memory": "360804Mi", "ephemeral-storage": "720Gi",
                    "nvidia.com/gpu": "8", "google.com/tpu": "0"}}
    assert vision["flavorFungibility"] == {"whenCanBorrow": "TryNextFlavor",
                                           "whenCanPreempt": "TryNextFlavor"}
    assert vision["cohortName"] == "ml-gke"
    assert vision["namespaceSelector"] == {"matchLabels": {
        "kubernetes.io/metadata.name": "vision"}}
    # research borrows vision's idle L4s: nominal 0, at most half of the pool (the stack's
    # borrowing_limit_percent: 50)
    [research] = cqs[("ml-gke", "research")]["resourceGroups"]
    assert [f["name"] for f in research["flavors"]] == ["h100-train", "v5p-slice", "l4-spot"]
    l4 = {r["name"]: (r["nominalQuota"], r.get("borrowingLimit"))
          for r in research["flavors"][2]["resources"]}
    assert l4 == {"cpu": ("0", "46564m"), "memory": ("0", "180402Mi"),
                  "ephemeral-storage": ("0", "360Gi"), "nvidia.com/gpu": ("0", "4"),
                  "google.com/tpu": ("0", "0")}
    [eks] = cqs[("ml-eks", "research")]["resourceGroups"]
    assert eks["coveredResources"] == ["cpu", "memory", "ephemeral-storage", "hugepages-2Mi",
                                       "nvidia.com/gpu", "vpc.amazonaws.com/efa"]
    # two p5.48xlarge as a real EKS p5 node's Allocatable shows them (cpu 191450m, memory
    # 2052371068Ki, hugepages-2Mi 42242Mi: aws-samples/awsome-distributed-training@7217859
    # 3.test_cases/pytorch/mosaicml-composer/stable-diffusion/README.md); a job requesting
    # hugepages-2Mi (as the AWS EFA guide's NCCL test does) is admitted only if it is covered;
    # cpu and memory less each node's DaemonSets (aws-node, nfd-worker, EFA plugin: 40m, 84Mi)
    assert {r["name"]: r["nominalQuota"] for r in eks["flavors"][0]["resources"]} == {
        "cpu": "382820m", "memory": "4008368Mi", "ephemeral-storage": "358Gi",
        "hugepages-2Mi": "84484Mi", "nvidia.com/gpu": "16", "vpc.amazonaws.com/efa": "64"}


def test_references_resolve_and_objects_wait_for_kueue(plan: Plan) -> None:
    by_urn = plan.by_urn()
    for cluster in ("ml-gke", "ml-eks"):
        objs = {(o.inputs["kind"], o.inputs["metadata"]["name"]): o
                for o in routing_objects(plan) if cluster_of(plan, o) == cluster}
        for (kind, name), o in objs.items():
            spec = o.inputs["spec"]
            waits = {by_urn[d].name for d in o.dependencies if d in by_urn}
            assert f"{cluster}-kueue" in waits, (kind, name)  # the release: CRDs, webhook
            if kind == "ClusterQueue":
                assert ("Cohort", spec["cohortName"]) in objs
                for f in spec["resourceGroups"][0]["flavors"]:
                    assert ("ResourceFlavor", f["name"]) in objs
                    assert f"{cluster}-queues-resourceflavor-{f['name']}" in waits
            if kind == "LocalQueue":
                assert ("ClusterQueue", spec["clusterQueue"]) in objs
                assert o.inputs["metadata"]["namespace"] == name
                assert {f"{cluster}-queues-clusterqueue-{name}",
                        f"{cluster}-queues-namespace-{name}"} <= waits
            assert o.provider is not None and o.provider.endswith(
                "::ml-gke-k8s" if cluster == "ml-gke" else "::ml-eks-k8s")


def test_plan_text_and_json_show_the_queues(plan: Plan) -> None:
    text = render(plan)
    assert ("queue ml-gke/vision (team vision, routing; cohort ml-gke): v6e-serve "
            "(google.com/tpu 4, cpu 179042m, memory 715167Mi, ephemeral-storage 180Gi) -> "
            "l4-spot (nvidia.com/gpu 8, cpu 93128m, memory 360804Mi, ephemeral-storage 720Gi)"
            ) in text
    assert "l4-spot (borrowed from vision while idle, up to nvidia.com/gpu 4" in text
    assert "ml-gke-queues (KueueQueues, 11 resources)" in text
    data = plan.to_dict()
    assert [r["cluster"] for r in data["routing"]] == ["ml-gke", "ml-eks"]
    gke = data["routing"][0]
    assert [f["name"] for f in gke["flavors"]] == ["h100-train", "l4-spot", "v5p-slice",
                                                   "v6e-serve"]
    vision = next(q for q in gke["queues"] if q["team"] == "vision")
    assert vision["nominal"] == {"cpu": "272170m", "memory": "1075971Mi",
                                 "ephemeral-storage": "900Gi", "nvidia.com/gpu": "8",
                                 "google.com/tpu": "4"}


# -- a job submitted to a queue, as docs/kueue.md shows it ------------------------------------
def _jobset_schema() -> dict[str, Any]:
    data = json.loads((DATA.parent.parent / "smoke" / "data" /
                       "jobset.x-k8s.io_jobsets-v0.12.0.json").read_text())
    return dict(data["openAPIV3Schema"])


def test_the_documented_jobset_fits_its_crd_and_the_example_queues() -> None:
    from ruamel.yaml import YAML

    text = (Path(__file__).resolve().parents[2] / "docs" / "kueue.md").read_text()
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "kind: JobSet" in b]
    js = YAML(typ="safe", pure=True).load(block)
    assert list(jsonschema.Draft7Validator(strict(_jobset_schema())).iter_errors(js)) == []
    for rjob in js["spec"]["replicatedJobs"]:
        kubernetes_validate.validate({"apiVersion": "batch/v1", "kind": "Job",
                                      "metadata": {"name": "check", "namespace": "vision"},
                                      "spec": rjob["template"]["spec"]}, K8S_VERSION,
                                     strict=True)
        pod = rjob["template"]["spec"]["template"]["spec"]
        assert "nodeSelector" not in pod and "tolerations" not in pod  # Kueue adds them
    # it names a queue of the example stack, in that queue's namespace, and fits its first
    # flavor (v6e-serve: 4 chips)
    [gke, *_] = fleet_routing(load_fleet(str(EXAMPLE_STACK)))
    queue = next(q for q in gke.queues if q.name == js["metadata"]["namespace"])
    assert js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == queue.name
    tpus = pod["containers"][0]["resources"]["limits"]["google.com/tpu"]
    assert tpus <= queue.flavors[0].nominal["google.com/tpu"]


def test_the_gke_control_plane_reaches_the_webhooks(plan: Plan) -> None:
    """A private GKE cluster's control plane reaches nodes on 443 and 10250 only; the API
    server calls Kueue's and JobSet's webhooks (9443) and Kueue's visibility API (8082) on
    their pods, so the cluster opens those ports to the control plane's range, and no more."""
    [rule] = [r for r in plan.of_type("gcp:compute/firewall:Firewall")
              if r.name == "ml-gke-webhooks"]
    assert rule.inputs["sourceRanges"] == ["172.16.0.0/28"]
    assert rule.inputs["direction"] == "INGRESS"
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["8082", "9443"]}]
