"""EKS zones come from the deploying account, never from zone letters (issue 20, item 11).

Before: a cluster whose pools named fewer than two zones was padded with `<region>a/b`, which
many accounts lack (ap-northeast-1b), and its control-plane subnets could land in an AZ ID EKS
refuses ("The subnets can't reside in the following Availability Zones": use1-az3, usw1-az2,
cac1-az3; https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html). Now the network
asks the provider's availability-zones lookup (state available, no opt-in) and the control plane
gets subnets only in zones EKS accepts. The mocks answer the lookup with one real account's
zones (tests/components/aws_zones.py)."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest

from components.aws import build_aws_cluster
from components.aws._layout import AccountZones, cluster_zones
from fleet import validate_fleet
from fleet.catalog import load_catalog
from fleet.errors import InputError
from tests.components.aws_zones import ACCOUNT_ZONES, zones_answer

SUBNET = "aws:ec2/subnet:Subnet"


def account(region: str, refused: tuple[str, ...] = ()) -> AccountZones:
    zones = ACCOUNT_ZONES[region]
    return AccountZones(tuple(n for n, _ in zones), tuple(i for _, i in zones),
                        frozenset(refused))


def test_padding_comes_from_the_account_and_skips_refused_az_ids() -> None:
    planned = cluster_zones("us-east-1", ["us-east-1e"], account("us-east-1", ("use1-az3",)))
    assert planned.zones == ["us-east-1a", "us-east-1b", "us-east-1e"]
    assert planned.control_plane == ["us-east-1a", "us-east-1b"]  # use1-az3 left out
    # the account's first zones EKS accepts, whatever the pools' (issue 27, class 3)
    assert planned.system == ["us-east-1a", "us-east-1b"]


def test_no_zone_letter_the_account_lacks() -> None:
    planned = cluster_zones("ap-northeast-1", ["ap-northeast-1a"], account("ap-northeast-1"))
    assert "ap-northeast-1b" not in planned.zones
    assert planned.zones == ["ap-northeast-1a", "ap-northeast-1c"]


def test_a_pool_zone_the_account_lacks_is_refused() -> None:
    with pytest.raises(InputError, match="ap-northeast-1b is not an available"):
        cluster_zones("ap-northeast-1", ["ap-northeast-1b"], account("ap-northeast-1"))


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self, region: str) -> None:
        self.region = region
        self.resources: list[Any] = []
        self.calls: list[Any] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        outputs = dict(args.inputs)
        if args.typ == "aws:eks/cluster:Cluster":
            outputs["vpcConfig"] = {**outputs["vpcConfig"], "clusterSecurityGroupId": "sg-c"}
            outputs["endpoint"] = "https://example.eks.amazonaws.com"
            outputs["certificateAuthority"] = {"data": "Q0E="}
            outputs["identities"] = [{"oidcs": [{"issuer": "https://oidc.example/id/X"}]}]
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            outputs["latestVersion"] = 1
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs
             ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        self.calls.append(args)
        return zones_answer(args, self.region) or {}, []


def build(region: str, zone: str) -> _Mocks:
    spec: dict[str, Any] = {
        "clouds": {"aws": {"account": "123456789012", "region": region}},
        "clusters": [{"name": "eks", "cloud": "aws"}],
        "teams": [{"name": "research"}],
        "pools": [{"name": "p5", "cluster": "eks", "team": "research",
                   "accelerator": "p5.48xlarge", "nodes": 1, "zone": zone}],
    }
    mocks = _Mocks(region)
    pulumi.runtime.set_mocks(mocks, preview=False)
    fleet = validate_fleet(copy.deepcopy(spec))

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        cluster = fleet.spec.clusters[0]
        return build_aws_cluster(cluster, fleet.pools_in(cluster.name), fleet, load_catalog(),
                                 pulumi.ResourceOptions()).endpoint

    run()
    return mocks


def _subnet_zones(mocks: _Mocks) -> dict[str, str]:
    return {r.name: r.inputs["availabilityZone"] for r in mocks.resources if r.typ == SUBNET}


def test_eks_control_plane_never_gets_a_subnet_in_use1_az3() -> None:
    mocks = build("us-east-1", "us-east-1e")  # p5.48xlarge is offered in use1-az3
    assert mocks.calls, "the network must ask the account for its zones"
    zones = _subnet_zones(mocks)
    assert sorted(set(zones.values())) == ["us-east-1a", "us-east-1b", "us-east-1e"]
    (cluster,) = [r for r in mocks.resources if r.typ == "aws:eks/cluster:Cluster"]
    assert sorted(cluster.inputs["vpcConfig"]["subnetIds"]) == [
        "eks-private-us-east-1a-id", "eks-private-us-east-1b-id"]
    (group,) = [r for r in mocks.resources if r.typ == "aws:eks/nodeGroup:NodeGroup"
                and r.name == "p5-ng"]
    assert group.inputs["subnetIds"] == ["eks-private-us-east-1e-id"]
    (system,) = [r for r in mocks.resources if r.typ == "aws:eks/nodeGroup:NodeGroup"
                 and r.name.startswith("eks-system")]
    assert sorted(system.inputs["subnetIds"]) == [
        "eks-private-us-east-1a-id", "eks-private-us-east-1b-id"]


def test_system_pool_and_vpc_stay_in_the_accounts_zones() -> None:
    mocks = build("ap-northeast-1", "ap-northeast-1a")
    assert "ap-northeast-1b" not in set(_subnet_zones(mocks).values())


def test_the_offline_plan_answers_the_lookup_from_the_catalog_or_says_it_cannot() -> None:
    """`accelfleet plan` has no account: it answers with the catalog's zones of the region and
    the uniform letter-to-AZ-ID mapping (components/engine/_offline_zones.py), and refuses a region
    the catalog lacks rather than guess."""
    from components.engine._offline_zones import az_id_prefix, offline_zones

    answer = offline_zones("ca-central-1")
    assert answer["names"][:2] == ["ca-central-1a", "ca-central-1b"]
    assert answer["zoneIds"][2] == "cac1-az3"
    assert [az_id_prefix(r) for r in ("us-east-1", "us-west-1", "ap-northeast-1",
                                      "eu-central-1", "us-gov-west-1")] == [
        "use1", "usw1", "apne1", "euc1", "usgw1"]
    with pytest.raises(InputError, match="knows no Availability Zones"):
        offline_zones("xx-nowhere-1")
