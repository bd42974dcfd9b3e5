"""The system pool and plain CPU pools under Pulumi's mocks (the offline plan).

References for the shapes asserted here:
- GKE: Cluster Toolkit modules/scheduler/gke-cluster/main.tf, `system_node_pools`: the
  cluster's node service account, secure boot and integrity monitoring, gVNIC, GKE_METADATA,
  auto repair and upgrade. (Its default taint `components.gke.io/gke-managed-components`
  admits only GKE's own components, so accelfleet leaves the pool untainted: the NFD master/gc
  and the JobSet controller it installs tolerate no such taint.)
  https://cloud.google.com/kubernetes-engine/docs/how-to/isolate-workloads-dedicated-nodes
- EKS: terraform-aws-eks examples/eks-managed-node-group/eks-al2023.tf (m6i.large,
  AL2023_x86_64_STANDARD, 2 nodes) and main.tf (`aws_eks_addon.this` depends_on the node
  groups unless `before_compute`), EKS Blueprints patterns/nvidia-gpu-efa/eks.tf (a `default`
  untainted group for core add-ons such as CoreDNS).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import Plan, PlannedResource, run_plan
from fleet.stack.read import EXAMPLE_STACK
from tests.plans import planned

NODE_POOL = "gcp:container/nodePool:NodePool"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"

STACK: dict[str, Any] = {
    "clouds": {"gcp": {"project": "acme-test-proj", "region": "us-central1"},
               "aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [
        {"name": "gke", "cloud": "gcp",
         "system_pool": {"machine_type": "n2-standard-4", "zone": "us-central1-c",
                         "autoscaling": {"min_nodes": 1, "max_nodes": 3},
                         "disk_size_gb": 150}},
        {"name": "eks", "cloud": "aws", "kubernetes_version": "1.33"},
        {"name": "bare", "cloud": "gcp", "system_pool": {"enabled": False},
         "network": {"cidr": "10.1.0.0/16", "pods_cidr": "10.4.0.0/14"}},
    ],
    "teams": [{"name": "ml"}],
    "pools": [
        {"name": "v6e", "cluster": "gke", "team": "ml", "accelerator": "v6e 2x2",
         "zone": "us-central1-b"},
        {"name": "cpu-gke", "cluster": "gke", "team": "ml", "accelerator": "e2-standard-8",
         "nodes": 2, "zones": ["us-central1-a", "us-central1-b"], "capacity": "spot"},
        {"name": "p5", "cluster": "eks", "team": "ml", "accelerator": "p5.48xlarge",
         "nodes": 1, "zone": "us-east-1a"},
        {"name": "cpu-eks", "cluster": "eks", "team": "ml", "accelerator": "m6i.2xlarge",
         "nodes": 1, "zone": "us-east-1c", "ami": "bottlerocket",
         "taints": [{"key": "example.com/batch", "value": "yes"}]},
    ],
}


@pytest.fixture(scope="module")
def example() -> Plan:
    return planned(EXAMPLE_STACK)


@pytest.fixture(scope="module")
def custom(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    path: Path = tmp_path_factory.mktemp("stack") / "Pulumi.systest.yaml"
    path.write_text(json.dumps({"config": {"accelfleet:fleet": STACK}}), encoding="utf-8")
    return run_plan(path)


def one(plan: Plan, typ: str, name: str) -> PlannedResource:
    found = [r for r in plan.of_type(typ) if r.name == name]
    assert len(found) == 1, (typ, name, [r.name for r in plan.of_type(typ)])
    return found[0]


# -- the example stack: a system pool on each cluster ----------------------------------------
def test_example_plan_has_a_system_pool_on_each_cluster(example: Plan) -> None:
    data = example.to_dict()
    systems = {p["cluster"]: p for p in data["system_pools"]}
    assert set(systems) == {"ml-gke", "ml-eks"}
    assert systems["ml-gke"]["machine_type"] == "e2-standard-4"
    assert systems["ml-eks"]["machine_type"] == "m6i.xlarge"
    assert all(p["team"] == "platform" and p["kind"] == "cpu" and p["nodes"] == 2
               and p["monthly_usd"] and p["resources"] >= 1 for p in systems.values())
    teams = {t["name"]: t for t in data["teams"]}
    assert teams["platform"]["monthly_usd"] == round(  # and the EKS control plane
        sum(p["monthly_usd"] for p in systems.values())
        + sum(c["monthly_usd"] for c in data["control_planes"]), 2)
    gke = one(example, NODE_POOL, "ml-gke-system-pool")
    assert gke.parent is not None
    assert gke.parent.endswith("accelfleet:gcp:CpuNodePool::ml-gke-system")
    eks = one(example, NODE_GROUP, "ml-eks-system-ng")
    assert eks.inputs["nodeGroupName"] == "system"


# -- GKE --------------------------------------------------------------------------------------
def test_gke_system_pool_is_untainted_and_secure(example: Plan) -> None:
    pool = one(example, NODE_POOL, "ml-gke-system-pool").inputs
    cfg = pool["nodeConfig"]
    assert pool["name"] == "system" and pool["location"] == "us-central1"
    assert pool["nodeLocations"] == ["us-central1-a", "us-central1-b"]
    assert pool["nodeCount"] == 1  # per zone: 2 nodes over 2 zones
    assert cfg["machineType"] == "e2-standard-4" and cfg["diskSizeGb"] == 100
    assert "taints" not in cfg or cfg["taints"] == []
    assert "guestAccelerators" not in cfg
    assert "accelfleet.io/accelerator" not in cfg["labels"]
    assert cfg["labels"]["accelfleet.io/team"] == "platform"
    # The same secure defaults as every accelerator pool.
    gpu = one(example, NODE_POOL, "h100-train-pool").inputs["nodeConfig"]
    assert cfg["serviceAccount"] == gpu["serviceAccount"]
    assert cfg["shieldedInstanceConfig"] == {"enableSecureBoot": True,
                                             "enableIntegrityMonitoring": True}
    assert cfg["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert cfg["metadata"] == {"disable-legacy-endpoints": "true"}
    assert pool["networkConfig"]["enablePrivateNodes"] is True
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}


def test_gke_system_pool_overrides_and_cpu_pool(custom: Plan) -> None:
    system = one(custom, NODE_POOL, "gke-system-pool").inputs
    assert system["nodeConfig"]["machineType"] == "n2-standard-4"
    assert system["nodeConfig"]["diskSizeGb"] == 150
    assert system["nodeLocations"] == ["us-central1-c"]
    assert system["autoscaling"]["totalMinNodeCount"] == 1
    assert system["autoscaling"]["totalMaxNodeCount"] == 3
    assert system["initialNodeCount"] == 1 and "nodeCount" not in system
    cpu = one(custom, NODE_POOL, "cpu-gke-pool")
    assert cpu.parent is not None and cpu.parent.endswith("accelfleet:gcp:CpuNodePool::cpu-gke")
    cfg = cpu.inputs["nodeConfig"]
    assert cfg["machineType"] == "e2-standard-8" and cfg["spot"] is True
    assert "taints" not in cfg or cfg["taints"] == []
    assert "guestAccelerators" not in cfg
    assert "accelfleet.io/accelerator" not in cfg["labels"]


def test_disabled_system_pool_builds_none(custom: Plan) -> None:
    assert [r.name for r in custom.of_type(NODE_POOL) if r.inputs["name"] == "system"] == [
        "gke-system-pool"]
    assert {p["cluster"] for p in custom.to_dict()["system_pools"]} == {"gke", "eks"}


def test_jobset_release_waits_for_the_gke_system_pool(custom: Plan) -> None:
    release = one(custom, RELEASE, "gke-jobset")
    system = one(custom, NODE_POOL, "gke-system-pool")
    assert system.urn in release.dependencies


# -- EKS --------------------------------------------------------------------------------------
def test_eks_system_node_group_standard_ami_untainted(example: Plan) -> None:
    group = one(example, NODE_GROUP, "ml-eks-system-ng").inputs
    assert group["amiType"] == "AL2023_x86_64_STANDARD"
    assert group["instanceTypes"] == ["m6i.xlarge"]
    assert group["capacityType"] == "ON_DEMAND"
    assert group["scalingConfig"] == {"minSize": 2, "desiredSize": 2, "maxSize": 2}
    assert "taints" not in group or group["taints"] == []
    assert "accelfleet.io/accelerator" not in group["labels"]
    assert group["labels"]["accelfleet.io/pool"] == "system"
    assert len(group["subnetIds"]) == 2  # the two zones' private subnets


def test_eks_system_launch_template_imdsv2_encrypted_gp3(example: Plan) -> None:
    lt = one(example, LAUNCH_TEMPLATE, "ml-eks-system-lt").inputs
    assert lt["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required",
                                     "httpPutResponseHopLimit": 1}
    [disk] = lt["blockDeviceMappings"]
    assert disk["deviceName"] == "/dev/xvda"
    assert disk["ebs"] == {"volumeSize": 100, "volumeType": "gp3", "encrypted": "true",
                           "deleteOnTermination": "true"}


def test_eks_helm_releases_wait_for_the_system_node_group(example: Plan) -> None:
    system = one(example, NODE_GROUP, "ml-eks-system-ng")
    releases = [r for r in example.of_type(RELEASE) if r.name.startswith("ml-eks-")]
    assert releases
    for release in releases:
        assert system.urn in release.dependencies, release.name


def test_eks_coredns_waits_for_and_vpc_cni_precedes_the_system_node_group(
        example: Plan) -> None:
    """terraform-aws-eks main.tf: `aws_eks_addon.this` (CoreDNS) depends_on the node groups;
    `before_compute` add-ons (vpc-cni) go in before them."""
    system = one(example, NODE_GROUP, "ml-eks-system-ng")
    coredns = one(example, "aws:eks/addon:Addon", "ml-eks-coredns")
    assert system.urn in coredns.dependencies
    vpc_cni = one(example, "aws:eks/addon:Addon", "ml-eks-vpc-cni")
    assert vpc_cni.urn in system.dependencies


def test_eks_cpu_pool_is_a_plain_node_group(custom: Plan) -> None:
    group = one(custom, NODE_GROUP, "cpu-eks-ng").inputs
    assert group["amiType"] == "BOTTLEROCKET_x86_64"
    assert group["instanceTypes"] == ["m6i.2xlarge"]
    assert group["taints"] == [{"key": "example.com/batch", "value": "yes",
                                "effect": "NO_SCHEDULE"}]
    assert "accelfleet.io/accelerator" not in group["labels"]
    lt = one(custom, LAUNCH_TEMPLATE, "cpu-eks-lt").inputs
    assert lt["blockDeviceMappings"][0]["deviceName"] == "/dev/xvdb"  # Bottlerocket data volume
    # The network has a private subnet in the CPU pool's own zone.
    subnets = [r for r in custom.of_type("aws:ec2/subnet:Subnet")
               if r.inputs.get("availabilityZone") == "us-east-1c"]
    assert subnets
