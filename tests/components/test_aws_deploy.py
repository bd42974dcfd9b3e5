"""What a real `pulumi up` on EKS would refuse or get wrong (issue 9, AWS findings), checked
under Pulumi's mocks with the dependencies each resource would be registered with."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest
from pulumi.runtime.mocks import MockMonitor

from components.aws import build_aws_cluster
from fleet import validate_fleet
from fleet.catalog import load_catalog
from tests.components.aws_zones import zones_answer

NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
PG = "aws:ec2/placementGroup:PlacementGroup"
ADDON = "aws:eks/addon:Addon"
CB = "cr-0123456789abcdef0"

SPEC: dict[str, Any] = {
    "clouds": {"aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "eks", "cloud": "aws", "kubernetes_version": "1.33"}],
    "teams": [{"name": "research"}],
    "pools": [
        {"name": "p5", "cluster": "eks", "team": "research", "accelerator": "p5.48xlarge",
         "nodes": 2, "zone": "us-east-1a"},
        {"name": "p5-cb", "cluster": "eks", "team": "research", "accelerator": "p5.48xlarge",
         "nodes": 2, "zone": "us-east-1b", "capacity": {"reservation": CB, "block": True}},
    ],
}


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: dict[tuple[str, str], dict[str, Any]] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources[(args.typ, args.name)] = dict(args.inputs)
        outputs = dict(args.inputs)
        if args.typ == "aws:eks/cluster:Cluster":
            outputs["vpcConfig"] = {**outputs["vpcConfig"], "clusterSecurityGroupId": "sg-c"}
            outputs["endpoint"] = "https://example.eks.amazonaws.com"
            outputs["certificateAuthority"] = {"data": "Q0E="}
            outputs["identities"] = [{"oidcs": [{"issuer": "https://oidc.example/id/X"}]}]
        if args.typ == LT:
            outputs["latestVersion"] = 1
        if args.typ == PG:
            outputs["name"] = f"{args.name}-pg"
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs
             ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return zones_answer(args) or {}, []  # the account's zones (tests/components/aws_zones)


class Built:
    """Resource inputs by (type, name), and the URNs each registration depends on."""

    def __init__(self, resources: dict[tuple[str, str], dict[str, Any]],
                 deps: dict[tuple[str, str], set[str]]) -> None:
        self.resources = resources
        self.deps = deps

    def inputs(self, typ: str, name: str) -> dict[str, Any]:
        assert (typ, name) in self.resources, sorted(n for t, n in self.resources if t == typ)
        return self.resources[(typ, name)]

    def names(self, typ: str) -> set[str]:
        return {n for t, n in self.resources if t == typ}

    def depends_on(self, typ: str, name: str, other_typ: str, other_name: str) -> bool:
        return any(u.endswith(f"{other_typ}::{other_name}") for u in self.deps[(typ, name)])


@pytest.fixture
def capture_deps(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[tuple[str, str], set[str]]]:
    """Record the `dependencies` of every RegisterResource request the mock monitor gets."""
    deps: dict[tuple[str, str], set[str]] = {}
    original = MockMonitor.RegisterResource

    def register(self: MockMonitor, request: Any) -> Any:
        deps[(request.type, request.name)] = set(request.dependencies)
        return original(self, request)

    monkeypatch.setattr(MockMonitor, "RegisterResource", register)
    yield deps


def build(spec: dict[str, Any], deps: dict[tuple[str, str], set[str]]) -> Built:
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, preview=False)
    fleet = validate_fleet(copy.deepcopy(spec))

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        cluster = fleet.spec.clusters[0]
        out = build_aws_cluster(cluster, fleet.pools_in(cluster.name), fleet, load_catalog(),
                                pulumi.ResourceOptions())
        return out.endpoint

    run()
    return Built(mocks.resources, deps)


@pytest.fixture
def built(capture_deps: dict[tuple[str, str], set[str]]) -> Built:
    return build(SPEC, capture_deps)


# -- Capacity Blocks ---------------------------------------------------------------------------
def test_capacity_block_instance_type_and_reservation_are_in_the_launch_template(
        built: Built) -> None:
    """EKS rejects a Capacity Block node group unless its launch template names the instance
    type, `InstanceMarketOptions.MarketType: capacity-block` and the reservation as
    `CapacityReservationSpecification.CapacityReservationTarget`; the node group itself names
    no instance type. References: EKS user guide "Create a managed node group with Capacity
    Blocks for ML" (https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html:
    "If the capacity type isn't set to CAPACITY_BLOCK or any of the other above required launch
    template values are missing, then the create request will be rejected"), and
    terraform-aws-modules/terraform-aws-eks modules/eks-managed-node-group/main.tf
    (`instance_type` on the launch template and `instance_types = null` on the node group for
    CAPACITY_BLOCK)."""
    lt = built.inputs(LT, "p5-cb-lt")
    assert lt["instanceType"] == "p5.48xlarge"
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": CB}}
    ng = built.inputs(NG, "p5-cb-ng")
    assert ng["capacityType"] == "CAPACITY_BLOCK"
    assert "instanceTypes" not in ng


def test_other_pools_keep_the_instance_type_on_the_node_group(built: Built) -> None:
    """Outside Capacity Blocks the instance type stays on the node group (terraform-aws-eks
    does the same: "Instance type(s) are generally set on the node group")."""
    assert built.inputs(NG, "p5-ng")["instanceTypes"] == ["p5.48xlarge"]
    lt = built.inputs(LT, "p5-lt")
    assert "instanceType" not in lt and "instanceMarketOptions" not in lt


# -- EKS managed add-ons -------------------------------------------------------------------------
def test_core_addons_are_managed_and_pinned(built: Built) -> None:
    """vpc-cni, kube-proxy and CoreDNS are EKS managed add-ons at the catalog's pinned
    versions for the cluster's Kubernetes version; they take over what EKS installed itself
    (resolve_conflicts_on_create OVERWRITE)."""
    pins = load_catalog().eks_addons.pins("1.33")
    assert built.names(ADDON) == {f"eks-{name}" for name in pins}
    assert set(pins) == {"vpc-cni", "kube-proxy", "coredns"}
    for name, version in pins.items():
        addon = built.inputs(ADDON, f"eks-{name}")
        assert addon["addonName"] == name and addon["addonVersion"] == version
        assert addon["clusterName"] == "eks"
        assert addon["resolveConflictsOnCreate"] == "OVERWRITE"


def test_node_groups_wait_for_vpc_cni_and_kube_proxy(built: Built) -> None:
    """Nodes need the VPC CNI (pod addresses; EFA-only interfaces need v1.18.5 or later, EKS
    user guide node-efa) and kube-proxy before they run pods: installed before compute, as
    terraform-aws-modules/terraform-aws-eks does with `before_compute = true`
    (main.tf `aws_eks_addon.before_compute`, examples/eks-managed-node-group)."""
    groups = built.names(NG)  # the GPU pools' and the system node group
    assert {f"{p['name']}-ng" for p in SPEC["pools"]} < groups
    for group in groups:
        assert built.depends_on(NG, group, ADDON, "eks-vpc-cni"), group
        assert built.depends_on(NG, group, ADDON, "eks-kube-proxy"), group


def test_coredns_waits_for_every_node_group(built: Built) -> None:
    """CoreDNS is a Deployment: created before any node exists, the add-on stays degraded
    (terraform-aws-eks creates non-`before_compute` add-ons after its node groups). It waits
    for every node group of the cluster, whatever kind."""
    for group in built.names(NG):
        assert built.depends_on(ADDON, "eks-coredns", NG, group), group
    assert not built.depends_on(ADDON, "eks-vpc-cni", NG, "p5-ng")


def test_cluster_without_a_version_gets_the_version_its_addons_are_pinned_for(
        capture_deps: dict[tuple[str, str], set[str]]) -> None:
    """kube-proxy and CoreDNS pins only fit one Kubernetes minor version; left to EKS, a new
    cluster would get EKS's default version and refuse them."""
    spec = copy.deepcopy(SPEC)
    del spec["clusters"][0]["kubernetes_version"]
    got = build(spec, capture_deps)
    default = load_catalog().eks_addons.default_kubernetes_version
    assert got.inputs("aws:eks/cluster:Cluster", "eks-eks")["version"] == default
    pins = load_catalog().eks_addons.pins(default)
    assert got.inputs(ADDON, "eks-kube-proxy")["addonVersion"] == pins["kube-proxy"]


# -- Capacity Blocks need no placement group -------------------------------------------------
def test_capacity_block_pool_gets_no_placement_group(built: Built) -> None:
    """"By default, Capacity Blocks deliver low-latency, high-throughput network connectivity
    between the instances inside the Capacity Block, so there is no need to use a cluster
    placement group with a Capacity Block" (AWS EC2 User Guide, "Work with Capacity Blocks",
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-using.html). An EFA
    pool on demand still gets one."""
    assert built.names(PG) == {"eks-p5"}
    assert "placement" not in built.inputs(LT, "p5-cb-lt")
    assert built.inputs(LT, "p5-lt")["placement"] == {"groupName": "eks-p5-pg"}
