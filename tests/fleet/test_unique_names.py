"""Issue 27, class 2: every name the fleet derives is unique in its scope, checked once over the
whole fleet (fleet.rules.unique_names), with both sources named; and the check knows every
name a plan gives (a plan's cloud and Kubernetes names are all in `derived_names`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet.rules.unique_names import derived_names
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import pool, problems
from tests.plans import planned

ROOT = Path(__file__).resolve().parents[2]


def _named(spec: dict[str, Any], needle: str) -> list[str]:
    return [f"{p.where}: {p.message}" for p in problems(spec) if needle in p.message]


def test_a_multislice_slice_and_a_pool_of_that_name(spec: dict[str, Any]) -> None:
    """The issue's example: `v6e` with multislice 2 makes node pool `v6e-s1`."""
    spec["pools"] += [
        pool(name="v6e", accelerator="v6e", topology="4x4", multislice=2, nodes=None,
             zone="us-central1-b"),
        pool(name="v6e-s1", accelerator="v6e 2x2", nodes=None, zone="us-central1-b"),
    ]
    found = _named(spec, "'v6e-s1' among the GKE node pools of cluster 'gke'")
    assert len(found) == 1, problems(spec)
    assert "pool 'v6e-s1'" in found[0] and "pool 'v6e' (slice 1 of multislice 2)" in found[0]


def test_a_cpu_pool_named_as_the_system_pools_component(spec: dict[str, Any]) -> None:
    """A CPU pool `gke-system` gets the Pulumi name of cluster gke's system pool component:
    Pulumi refuses the duplicate URN at `pulumi up`."""
    spec["pools"].append(pool(name="gke-system", accelerator="n2-standard-8", nodes=1))
    found = _named(spec, "'gke-system' among the Pulumi names of accelfleet CpuNodePool")
    assert found and "cluster 'gke''s system pool" in found[0]


def test_two_eks_clusters_whose_placement_groups_meet(spec: dict[str, Any]) -> None:
    """Cluster `eks` pool `a-p5` and cluster `eks-a` pool `p5` both name a placement group
    `eks-a-p5`."""
    spec["clusters"].append({"name": "eks-a", "cloud": "aws",
                             "network": {"cidr": "10.30.0.0/16"}})
    spec["pools"] += [
        pool(name="a-p5", cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a"),
        pool(name="p5", cluster="eks-a", accelerator="p5.48xlarge", zone="us-east-1a"),
    ]
    found = _named(spec, "'eks-a-p5' among the Pulumi names of aws:ec2/placementGroup")
    assert found and "pool 'a-p5'" in found[0] and "pool 'p5'" in found[0]


def test_tpu_vm_slices_and_a_pool_of_that_name(spec: dict[str, Any]) -> None:
    spec["pools"] += [
        pool(name="v5", runtime="tpu-vm", cluster=None, accelerator="v5litepod-8",
             multislice=2, nodes=None, zone="us-central1-a"),
        pool(name="v5-1", runtime="tpu-vm", cluster=None, accelerator="v5litepod-8",
             nodes=None, zone="us-central1-a"),
    ]
    found = _named(spec, "'v5-1' among the Cloud TPU VMs of project acme-ml-prod zone "
                         "us-central1-a")
    assert found, problems(spec)


def test_distinct_names_pass(spec: dict[str, Any]) -> None:
    spec["pools"].append(pool(name="v6e", accelerator="v6e", topology="4x4", multislice=2,
                              nodes=None, zone="us-central1-b"))
    validate_fleet(spec)


# -- the check knows every name a plan gives -------------------------------------------------
# plan resource type -> (the scope's words in derived_names, where the plan keeps the name)
PLAN_NAMES = {
    "gcp:container/nodePool:NodePool": ("GKE node pools of cluster", "name"),
    "aws:eks/nodeGroup:NodeGroup": ("EKS node groups of cluster", "nodeGroupName"),
    "gcp:tpu/v2Vm:V2Vm": ("Cloud TPU VMs of project", "name"),
    "gcp:serviceaccount/account:Account": ("service accounts of project", "accountId"),
    "gcp:compute/subnetwork:Subnetwork": ("subnetworks of project", "name"),
    "gcp:compute/router:Router": ("routers of project", "name"),
    "kubernetes:core/v1:Namespace": ("namespaces of cluster", "metadata.name"),
    "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": ("Kueue ClusterQueues of cluster",
                                                       "metadata.name"),
    "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass": (
        "Kueue WorkloadPriorityClasses of cluster", "metadata.name"),
}
# GPUDirect networks (components/gcp/_network.py gpudirect_plan: `<cluster>-gpu-...`) are
# named from the cluster alone, apart from the primary VPC's names; the check lists the
# primary VPC's.
GPUDIRECT = "-gpu-"
STACKS = ["stacks/Pulumi.example.yaml", "tests/components/fixtures/Pulumi.gcpcapacity.yaml",
          "tests/components/fixtures/Pulumi.gcptaints.yaml",
          "tests/components/fixtures/Pulumi.gcptest.yaml"]


def _get(inputs: dict[str, Any], path: str) -> Any:
    value: Any = inputs
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


@pytest.mark.parametrize("stack", STACKS)
def test_every_name_a_plan_gives_is_one_the_check_knows(stack: str) -> None:

    plan = planned(ROOT / stack)
    fleet = plan.fleet
    known = {(d.scope.split(" of ")[0] + " of", d.name)
             for d in derived_names(fleet.spec, fleet.pools, fleet.system_pools, fleet.routing)}
    missing, checked = [], 0
    for r in plan.resources:
        if r.type not in PLAN_NAMES:
            continue
        words, path = PLAN_NAMES[r.type]
        name = _get(r.inputs, path)
        if not isinstance(name, str) or GPUDIRECT in name:
            continue
        checked += 1
        if (words.split(" of ")[0] + " of", name) not in known:
            missing.append(f"{r.type} {name}")
    assert checked > 3
    assert missing == []
    # and the plan's Pulumi names are unique (one URN each)
    urns = [r.urn for r in plan.resources]
    assert len(urns) == len(set(urns))
