"""The longest names the rules accept, planned: every name the components derive from them
(VPCs, subnets, routers, firewalls, GPUDirect networks, slice node pools, TPU VMs, workload
policies, node groups) and every label and tag fits the place it lands (catalog limits.yaml
`names`). The rules check the stack's names; this checks that the components derive nothing
longer than the rules allowed for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import Plan, run_plan
from fleet.catalog import load_catalog
from fleet.k8s_names import WorkloadShape, longest_pool_name

CLUSTER = "c" + "g" * 39  # 40: the longest cluster name
POOL = "p" * 40
# A TPU pool in GKE is smoked and proven as a JobSet whose pods `<af-run-pool>-slice-<j>-<i>-
# <5 random>` take at most 63 (JobSet's webhook; fleet.k8s_names): the longest name validate
# takes for a slice is shorter than the node pool's 40 (issue 36 class 2).
SLICED = "s" * longest_pool_name(WorkloadShape("tpu", slices=4, hosts_per_slice=4))  # 27
IRONWOOD = "w" * longest_pool_name(WorkloadShape("tpu", slices=1, hosts_per_slice=2))

STACK = f"""config:
  accelfleet:fleet:
    clouds:
      gcp: {{project: acme-ml-prod, region: us-central1}}
      aws: {{account: "123456789012", region: us-east-1}}
    clusters:
      - {{name: {CLUSTER}, cloud: gcp}}
      - {{name: {"e" * 40}, cloud: aws, network: {{cidr: 10.20.0.0/16}}}}
    teams:
      - {{name: {"t" * 63}}}
    pools:
      - {{name: {POOL}, cluster: {CLUSTER}, team: {"t" * 63}, accelerator: a3-highgpu-8g,
         nodes: 1, zone: us-central1-a, labels: {{"{"x" * 63}": "{"v" * 63}"}}}}
      - {{name: {"m" * 40}, cluster: {CLUSTER}, team: {"t" * 63}, accelerator: a3-megagpu-8g,
         nodes: 1, zone: us-central1-a}}
      - {{name: {"u" * 40}, cluster: {CLUSTER}, team: {"t" * 63}, accelerator: a3-ultragpu-8g,
         nodes: 1, zone: us-central1-b}}
      - {{name: {SLICED}, cluster: {CLUSTER}, team: {"t" * 63}, accelerator: v5p,
         topology: 2x2x4, multislice: 4, zone: us-central1-a}}
      - {{name: {IRONWOOD}, cluster: {CLUSTER}, team: {"t" * 63}, accelerator: tpu7x,
         topology: 2x2x2, zone: us-central1-c}}
      - {{name: {"v" * 38}, runtime: tpu-vm, team: {"t" * 63}, accelerator: v5p-8,
         zone: us-central1-a}}
      - {{name: {"a" * 40}, cluster: {"e" * 40}, team: {"t" * 63}, accelerator: p5.48xlarge,
         nodes: 1, zone: us-east-1a}}
"""
# Where each resource's `name` input lands.
PLACE = {
    "gcp:container/cluster:Cluster": "gke_cluster",
    "gcp:container/nodePool:NodePool": "gke_node_pool",
    "gcp:compute/network:Network": "gce_resource",
    "gcp:compute/subnetwork:Subnetwork": "gce_resource",
    "gcp:compute/router:Router": "gce_resource",
    "gcp:compute/routerNat:RouterNat": "gce_resource",
    "gcp:compute/firewall:Firewall": "gce_resource",
    "gcp:compute/resourcePolicy:ResourcePolicy": "gce_resource",
    "gcp:tpu/v2Vm:V2Vm": "gce_resource",
    "aws:eks/cluster:Cluster": "eks_cluster",
}


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    path = Path(tmp_path_factory.mktemp("names")) / "Pulumi.longnames.yaml"
    path.write_text(STACK, encoding="utf-8")
    return run_plan(path)


def dicts(value: Any, key: str) -> Iterator[dict[str, Any]]:
    """Every mapping under `key` anywhere in `value`."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key and isinstance(v, dict):
                yield v
            yield from dicts(v, key)
    elif isinstance(value, list):
        for v in value:
            yield from dicts(v, key)


def test_every_derived_name_fits_its_place(plan: Plan) -> None:
    rules = load_catalog().names
    checked: set[str] = set()
    for r in plan.resources:
        place = PLACE.get(r.type)
        if place is None or not isinstance(r.inputs.get("name"), str):
            continue
        assert rules[place].problem(r.inputs["name"]) is None, (r.type, r.inputs["name"])
        checked.add(r.type)
    assert set(PLACE) - checked <= {"gcp:compute/routerNat:RouterNat"}, checked
    groups = [r.inputs["nodeGroupName"] for r in plan.resources
              if r.type == "aws:eks/nodeGroup:NodeGroup"]
    assert groups and all(rules["eks_node_group"].problem(g) is None for g in groups)
    accounts = [r.inputs["accountId"] for r in plan.resources
                if r.type == "gcp:serviceaccount/account:Account"]
    assert accounts and all(rules["gcp_service_account"].problem(a) is None for a in accounts)
    # IAM roles are auto-named: the resource name, '-' and 7 random characters, 64 at most
    roles = [r.name for r in plan.resources if r.type == "aws:iam/role:Role"]
    assert roles and all(len(n) + 8 <= 64 for n in roles), roles
    names = {r.inputs["name"] for r in plan.resources
             if r.type == "gcp:container/nodePool:NodePool"}
    assert {f"{SLICED}-s{i}" for i in range(4)} <= names


def test_every_label_and_tag_fits(plan: Plan) -> None:
    rules = load_catalog().names
    for r in plan.resources:
        for labels in dicts(r.inputs, "resourceLabels"):
            for v in labels.values():
                assert rules["gce_label_value"].problem(v) is None, (r.type, v)
        if r.type == "gcp:tpu/v2Vm:V2Vm":
            for v in r.inputs["labels"].values():
                assert rules["gce_label_value"].problem(v) is None, v
        for labels in dicts(r.inputs, "labels"):
            for k, v in labels.items():
                assert rules["k8s_label_value"].problem(str(v)) is None, (r.type, k, v)
        if r.type.startswith("aws:"):
            for tags in dicts(r.inputs, "tags"):
                for v in tags.values():
                    assert rules["aws_tag_value"].problem(str(v)) is None, (r.type, v)
