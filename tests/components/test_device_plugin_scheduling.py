"""The device plugins land on every node of the pools they serve, whatever taints a pool adds.

The Helm values we pass are turned into the DaemonSets the pinned charts would render (their
templates' scheduling parts, below), validated strictly against the Kubernetes 1.33 schema, and
scheduled against the nodes of a test stack whose pools carry extra taints: each node built
from the recorded real EKS node of its instance type (tests/smoke/data/nodes, with its source)
plus what the node group declares.

Chart templates read for the rendering (scheduling parts only):
- NVIDIA/k8s-device-plugin v0.20.0 (1b826ac) deployments/helm/nvidia-device-plugin/templates/
  daemonset-device-plugin.yml and daemonset-gfd.yml: `nodeSelector`, `affinity`, `tolerations`
  straight from the values (unchanged since v0.18.2: `git diff v0.18.2 v0.20.0` touches only
  hostNetwork and the service account there); the node-feature-discovery subchart (0.19.0 at
  v0.20.0) templates/worker.yaml from `nfd.worker.{nodeSelector,affinity,tolerations}`
  (kubernetes-sigs/node-feature-discovery@0132544, read 2026-11-24).
- aws/eks-charts stable/aws-efa-k8s-device-plugin (v0.5.30) templates/daemonset.yaml:
  tolerations `CriticalAddonsOnly: Exists` plus `.Values.tolerations`; `nodeSelector`; a
  required node affinity with one term per `supportedInstanceLabels.keys` entry (`key In
  supportedInstanceLabels.values`), the last term also `eks.amazonaws.com/compute-type NotIn
  [auto]`.
Helm merges the values over the chart defaults: maps merge, lists are replaced.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pulumi
import pytest
from ruamel.yaml import YAML

from components.aws import build_aws_cluster
from components.k8s import (
    EFA_DEVICE_PLUGIN,
    NVIDIA_DEVICE_PLUGIN,
    GpuScheduling,
    PoolNodes,
    dcgm_exporter_values,
)
from fleet import validate_fleet
from fleet.catalog import Taint, load_catalog
from fleet.model import ACCELERATOR_LABEL
from tests.components.aws_zones import zones_answer
from tests.smoke.nodes import eks_node

K8S_VERSION = "1.33"
RELEASE = "kubernetes:helm.sh/v3:Release"
FIXTURE = (Path(__file__).parent / "fixtures"
           / f"aws-efa-k8s-device-plugin-{EFA_DEVICE_PLUGIN.version}.yaml")
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
EKS_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute",
              "PREFER_NO_SCHEDULE": "PreferNoSchedule"}

# Every accelerator pool carries a taint of its own besides the GPU taint.
SPEC: dict[str, Any] = {
    "clouds": {"aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "eks", "cloud": "aws", "kubernetes_version": "1.33"}],
    "teams": [{"name": "research"}],
    "pools": [
        {"name": "b200", "cluster": "eks", "team": "research", "accelerator": "p6-b200.48xlarge",
         "nodes": 2, "zone": "us-east-1a",
         "taints": [{"key": "example.com/dedicated", "value": "training", "effect": "NoExecute"}]},
        {"name": "h100-br", "cluster": "eks", "team": "research", "accelerator": "p5.48xlarge",
         "nodes": 1, "zone": "us-east-1a", "ami": "bottlerocket",
         "taints": [{"key": "example.com/ami", "value": "br", "effect": "NoSchedule"}]},
        {"name": "l40s", "cluster": "eks", "team": "research", "accelerator": "g6e.48xlarge",
         "nodes": 1, "zone": "us-east-1b",
         "taints": [{"key": "example.com/team", "effect": "PreferNoSchedule"},
                    {"key": "example.com/gpu-class", "value": "l40s", "effect": "NoSchedule"}]},
        {"name": "l4-ci", "cluster": "eks", "team": "research", "accelerator": "g6.12xlarge",
         "nodes": 1, "zones": ["us-east-1a", "us-east-1b"], "placement": "none", "fabric": "off",
         "taints": [{"key": "example.com/ci", "value": "yes", "effect": "NoSchedule"}]},
    ],
}


# -- the stack's nodes and Helm values ------------------------------------------------------------
class _Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        outputs = dict(args.inputs)
        if args.typ == "aws:eks/cluster:Cluster":
            outputs["vpcConfig"] = {**outputs["vpcConfig"], "clusterSecurityGroupId": "sg-c"}
            outputs["endpoint"] = "https://example.eks.amazonaws.com"
            outputs["certificateAuthority"] = {"data": "Q0E="}
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            outputs["latestVersion"] = 1
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs
             ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return zones_answer(args) or {}, []  # the account's zones (tests/components/aws_zones)


class Stack:
    def __init__(self, nodes: dict[str, dict[str, Any]], values: dict[str, dict[str, Any]]):
        self.nodes = nodes  # pool -> {"labels": ..., "taints": [...]} of its nodes
        self.values = values  # chart -> the values we pass


@pytest.fixture(scope="module")
def stack() -> Stack:
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, preview=False)
    fleet = validate_fleet(copy.deepcopy(SPEC))

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        cluster = fleet.spec.clusters[0]
        return build_aws_cluster(cluster, fleet.pools_in(cluster.name), fleet, load_catalog(),
                                 pulumi.ResourceOptions()).endpoint

    run()
    nodes = {}
    for r in mocks.resources:
        if r.typ == "aws:eks/nodeGroup:NodeGroup" and r.inputs["nodeGroupName"] in {
                p["name"] for p in SPEC["pools"]}:
            pool = next(p for p in fleet.pools if p.name == r.inputs["nodeGroupName"])
            # the recorded real node of its instance type, with what the node group declares
            taints = [{"key": t["key"], "value": t.get("value", ""),
                       "effect": EKS_EFFECT[t["effect"]]} for t in r.inputs["taints"]]
            node = eks_node(f"{pool.name}-0", pool.shape.machine_type,
                            nodegroup=r.inputs["nodeGroupName"],
                            zone=pool.spec.zones[0], labels=dict(r.inputs["labels"]),
                            taints=taints, spot=pool.spec.capacity.spot)
            assert node["metadata"]["labels"][INSTANCE_TYPE] == pool.shape.machine_type
            nodes[pool.name] = {"labels": node["metadata"]["labels"],
                                "taints": node["spec"]["taints"]}
    values = {r.inputs["chart"]: r.inputs["values"] for r in mocks.resources
              if r.typ == RELEASE}
    return Stack(nodes, values)


# -- the charts' DaemonSets, as their templates render them --------------------------------------
def merge(defaults: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of values over chart defaults: maps merge, anything else replaces."""
    out = copy.deepcopy(defaults)
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def daemonset(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    spec = {k: v for k, v in pod.items() if v}
    spec["containers"] = [{"name": name, "image": "registry.k8s.io/pause:3.10"}]
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"name": name}},
                     "template": {"metadata": {"labels": {"name": name}}, "spec": spec}}}


def nvidia_daemonsets(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Device plugin and GFD (same scheduling values), and the NFD worker of its subchart."""
    v = values
    plugin = {"nodeSelector": v.get("nodeSelector"), "affinity": v.get("affinity"),
              "tolerations": v.get("tolerations")}
    worker = v.get("nfd", {}).get("worker", {})
    nfd = {"nodeSelector": worker.get("nodeSelector"), "affinity": worker.get("affinity"),
           "tolerations": worker.get("tolerations")}
    return {"nvidia-device-plugin": daemonset("nvidia-device-plugin", plugin),
            "gpu-feature-discovery": daemonset("gpu-feature-discovery", plugin),
            "nfd-worker": daemonset("nfd-worker", nfd)}


def efa_defaults() -> dict[str, Any]:
    data = YAML(typ="safe").load(FIXTURE.read_text(encoding="utf-8"))
    return {"supportedInstanceLabels": {"keys": data["keys"], "values": data["values"]},
            "nodeSelector": {}, "tolerations": []}


def efa_daemonset(values: dict[str, Any]) -> dict[str, Any]:
    v = merge(efa_defaults(), values)
    terms: list[dict[str, Any]] = [
        {"matchExpressions": [{"key": key, "operator": "In",
                               "values": list(v["supportedInstanceLabels"]["values"])}]}
        for key in v["supportedInstanceLabels"]["keys"]]
    terms[-1]["matchExpressions"].append(
        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]})
    pod = {"tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                           *v["tolerations"]],
           "nodeSelector": v["nodeSelector"],
           "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
               "nodeSelectorTerms": terms}}}}
    return daemonset("aws-efa-k8s-device-plugin", pod)


# -- a small scheduler: taints and node selection ------------------------------------------
def tolerated(taint: dict[str, str], tolerations: list[dict[str, str]]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and t.get("value", "") == taint["value"]:
            return True
    return False


def expression_holds(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    op, key = expr["operator"], expr["key"]
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op == "In":
        return labels.get(key) in expr["values"]
    if op == "NotIn":
        return labels.get(key) not in expr["values"]
    raise AssertionError(f"operator {op} not modelled")


def lands_on(ds: dict[str, Any], node: dict[str, Any]) -> bool:
    pod = ds["spec"]["template"]["spec"]
    labels = node["labels"]
    if any(labels.get(k) != v for k, v in (pod.get("nodeSelector") or {}).items()):
        return False
    required = (pod.get("affinity") or {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required and not any(all(expression_holds(e, labels) for e in term["matchExpressions"])
                            for term in required["nodeSelectorTerms"]):
        return False
    hard = [t for t in node["taints"] if t["effect"] in ("NoSchedule", "NoExecute")]
    return all(tolerated(t, pod.get("tolerations") or []) for t in hard)


def pools_landed(ds: dict[str, Any], stack: Stack) -> set[str]:
    return {name for name, node in stack.nodes.items() if lands_on(ds, node)}


# -- the checks ------------------------------------------------------------------------------
def test_the_test_stack_has_extra_taints_on_every_pool(stack: Stack) -> None:
    assert set(stack.nodes) == {p["name"] for p in SPEC["pools"]}
    for node in stack.nodes.values():
        assert len(node["taints"]) >= 2  # the GPU taint and the pool's own


def test_rendered_daemonsets_are_valid_kubernetes(stack: Stack) -> None:
    sets = [*nvidia_daemonsets(stack.values[NVIDIA_DEVICE_PLUGIN.chart]).values(),
            efa_daemonset(stack.values[EFA_DEVICE_PLUGIN.chart])]
    for ds in sets:
        kubernetes_validate.validate(ds, K8S_VERSION, strict=True)


def test_nvidia_plugin_gfd_and_nfd_worker_run_on_every_gpu_pool(stack: Stack) -> None:
    """The plugin must run on every GPU node it serves whatever taints the pool carries, or
    `nvidia.com/gpu` is never advertised there. The references tolerate the GPU taint only
    (NVIDIA/k8s-device-plugin values.yaml `tolerations`; NVIDIA/gpu-operator
    deployments/gpu-operator/values.yaml `daemonsets.tolerations`) and leave other taints to
    the operator's values; we derive those tolerations from the pools."""
    sets = nvidia_daemonsets(stack.values[NVIDIA_DEVICE_PLUGIN.chart])
    assert pools_landed(sets["nvidia-device-plugin"], stack) == {"b200", "l40s", "l4-ci"}
    assert pools_landed(sets["gpu-feature-discovery"], stack) == {"b200", "l40s", "l4-ci"}
    assert pools_landed(sets["nfd-worker"], stack) == set(stack.nodes)


def test_bottlerocket_nodes_get_no_second_nvidia_plugin(stack: Stack) -> None:
    sets = nvidia_daemonsets(stack.values[NVIDIA_DEVICE_PLUGIN.chart])
    assert "h100-br" not in pools_landed(sets["nvidia-device-plugin"], stack)


def test_efa_plugin_runs_on_every_efa_pool_including_p6_b200(stack: Stack) -> None:
    """p6-b200 nodes must advertise `vpc.amazonaws.com/efa`: the chart's DaemonSet is scheduled
    by the node label accelfleet sets on EFA pools (`vpc.amazonaws.com/efa.present: "true"`),
    through the chart's own `supportedInstanceLabels`, not its instance-type list (v0.5.7's
    list lacked p6-b200.48xlarge; aws/eks-charts added it on 2025-06-02, commit 05923ee)."""
    ds = efa_daemonset(stack.values[EFA_DEVICE_PLUGIN.chart])
    assert pools_landed(ds, stack) == {"b200", "h100-br", "l40s"}


def test_every_catalog_efa_shape_is_in_the_pinned_charts_own_list() -> None:
    """Even with the chart's default list the plugin would serve every EFA shape we catalog."""
    data = YAML(typ="safe").load(FIXTURE.read_text(encoding="utf-8"))
    assert data["version"] == EFA_DEVICE_PLUGIN.version
    efa = {m.name for m in load_catalog().machines.values()
           if m.networking is not None and m.networking.kind == "efa"}
    assert "p6-b200.48xlarge" in efa
    assert efa <= set(data["values"]), sorted(efa - set(data["values"]))


def test_the_small_scheduler_is_honest() -> None:
    """The small scheduler agrees with Kubernetes on the cases the checks rely on."""
    node = {"labels": {"a": "1"}, "taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]}
    ds = daemonset("x", {"tolerations": [{"key": "k", "operator": "Equal", "value": "v",
                                          "effect": "NoSchedule"}]})
    assert not lands_on(ds, node)  # wrong effect
    ds = daemonset("x", {"tolerations": [{"key": "k", "operator": "Exists"}]})
    assert lands_on(ds, node)
    ds = daemonset("x", {"tolerations": [{"operator": "Exists"}], "nodeSelector": {"a": "2"}})
    assert not lands_on(ds, node)


def test_dcgm_exporter_runs_on_every_gpu_pool(stack: Stack) -> None:
    """The optional DCGM exporter (chart `affinity`/`tolerations` straight from the values)
    follows the same rule: every GPU pool, Bottlerocket included, whatever its taints."""
    catalog = load_catalog()
    taint = catalog.kube(catalog.resolve("p5.48xlarge", cloud="aws")).taint
    pools = tuple(PoolNodes(name, node["labels"], tuple(Taint(**t) for t in node["taints"]))
                  for name, node in stack.nodes.items())
    scheduling = GpuScheduling(gpu_taint=taint, gpu_node_label=ACCELERATOR_LABEL,
                               efa_label=catalog.kube_section("aws", "efa")["label"],
                               plugin_excluded={"accelfleet.io/ami": ["bottlerocket"]},
                               pools=pools)
    values = dcgm_exporter_values(scheduling)
    ds = daemonset("dcgm-exporter", {"affinity": values["affinity"],
                                     "tolerations": values["tolerations"]})
    kubernetes_validate.validate(ds, K8S_VERSION, strict=True)
    assert pools_landed(ds, stack) == set(stack.nodes)
