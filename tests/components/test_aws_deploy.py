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
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


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
