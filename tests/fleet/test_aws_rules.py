"""AWS deploy-correctness rules and catalog facts (issue 9): what EC2/EKS would refuse, caught
before any cloud call, each with the reference it comes from."""

from __future__ import annotations

from typing import Any

import pytest

from fleet import validate_fleet
from fleet.catalog import Catalog, load_catalog
from fleet.errors import Problem
from tests.fleet.conftest import pool, problems

CB = "cr-0123456789abcdef0"


@pytest.fixture
def cat() -> Catalog:
    return load_catalog()




def at(spec: dict[str, Any], where: str) -> Problem:
    found = [p for p in problems(spec) if p.where == where]
    assert found, f"no problem at {where}: {problems(spec)}"
    return found[0]


def aws_pool(**fields: Any) -> dict[str, Any]:
    return pool(**{"name": "p", "cluster": "eks", "accelerator": "p5.48xlarge",
                   "zone": "us-east-1a", **fields})


# -- Capacity Blocks -----------------------------------------------------------------------------
def test_capacity_blocks_only_on_instance_types_that_offer_them(spec: dict[str, Any]) -> None:
    """A g6.12xlarge Capacity Block does not exist: EC2 sells Capacity Blocks for p6-b200, p5,
    p5e, p5en, p4d, p4de, trn1 and trn2 instances only (AWS EC2 User Guide, "How Capacity
    Blocks work", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-how.html;
    supported types and Regions: .../ec2-capacity-blocks.html#capacity-blocks-prerequisites)."""
    spec["pools"] = [aws_pool(name="g6", accelerator="g6.12xlarge",
                              capacity={"reservation": CB, "block": True})]
    p = at(spec, "pools 'g6'.capacity.block")
    assert "g6.12xlarge" in p.message and "Capacity Block" in p.message
    assert "p5.48xlarge" in p.accepted and "p6-b200.48xlarge" in p.accepted
    assert "g6.12xlarge" not in p.accepted
    assert "remove `block`" in p.hint


@pytest.mark.parametrize("machine", ["p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge",
                                     "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"])
def test_capacity_block_instance_types_validate(spec: dict[str, Any], machine: str) -> None:
    spec["pools"] = [aws_pool(accelerator=machine, capacity={"reservation": CB, "block": True})]
    fleet = validate_fleet(spec)
    assert fleet.pools[0].shape.machine is not None
    assert fleet.pools[0].shape.machine.capacity_block


def test_capacity_block_availability_is_catalog_data_with_a_source(cat: Catalog) -> None:
    offered = {m.name for m in cat.machines.values() if m.capacity_block}
    # the docs name families ("p5"): p5.4xlarge (issue 20 item 15) is one of them
    assert offered == {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5.4xlarge",
                       "p5e.48xlarge",
                       "p5en.48xlarge", "p6-b200.48xlarge"}
    assert "capacity-blocks" in cat.capacity_blocks_source


# -- EFA on G5, G6, G6e ---------------------------------------------------------------------------
EFA_G = {
    # one EFA interface per network card; network cards per size from DescribeInstanceTypes
    "g5.8xlarge": 1, "g5.12xlarge": 1, "g5.16xlarge": 1, "g5.24xlarge": 1, "g5.48xlarge": 1,
    "g6.8xlarge": 1, "g6.12xlarge": 1, "g6.16xlarge": 1, "g6.24xlarge": 1, "g6.48xlarge": 1,
    "g6e.8xlarge": 1, "g6e.12xlarge": 1, "g6e.16xlarge": 1, "g6e.24xlarge": 2,
    "g6e.48xlarge": 4,
}


def test_g5_g6_g6e_from_8xlarge_have_efa(cat: Catalog) -> None:
    """G5, G6 and G6e support EFA at 8xlarge and above (AWS EC2 User Guide, EFA "Supported
    instance types", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-instance-types;
    the same list is the supportedInstanceLabels of aws/eks-charts
    stable/aws-efa-k8s-device-plugin v0.5.30). One EFA per network card: G6e has up to four
    (EC2 User Guide, efa-acc-inst-types: "G6e instances support up to four network cards");
    per size from aws/amazon-vpc-cni-k8s pkg/vpc/vpc_ip_resource_limit.go (generated from
    DescribeInstanceTypes)."""
    for family in ("g5", "g6", "g6e"):
        for machine in (m for m in cat.machines.values() if m.family == family):
            want = EFA_G.get(machine.name)
            if want is None:
                assert machine.networking is None, machine.name
            else:
                assert machine.networking is not None, machine.name
                assert machine.networking.kind == "efa"
                assert machine.networking.efa_interfaces == want, machine.name
                assert "efa" in machine.networking.source and "2026" in machine.networking.source


# -- zones: EFA and reservations are zonal --------------------------------------------------------
def test_efa_pool_spanning_zones_is_refused(spec: dict[str, Any]) -> None:
    """EFA traffic stays inside one Availability Zone (EKS user guide, node-efa, "EFA and
    EFA-only interfaces": "limiting communication to interfaces within the same Availability
    Zone"); `placement: none` lifts the compact rule, so this one catches it."""
    spec["pools"] = [aws_pool(name="g6", accelerator="g6.12xlarge", placement="none",
                              zone=None, zones=["us-east-1a", "us-east-1b"])]
    p = at(spec, "pools 'g6'.zones")
    assert "EFA" in p.message and "us-east-1a, us-east-1b" in p.message
    assert "fabric: off" in p.hint and "one zone" in p.hint


def test_efa_pool_with_fabric_off_may_span_zones(spec: dict[str, Any]) -> None:
    spec["pools"] = [aws_pool(name="g6", accelerator="g6.12xlarge", placement="none",
                              fabric="off", zone=None, zones=["us-east-1a", "us-east-1b"])]
    assert validate_fleet(spec).pools[0].networking is None


@pytest.mark.parametrize(("cluster", "accelerator", "zones", "capacity"), [
    ("eks", "g6.12xlarge", ["us-east-1a", "us-east-1b"], {"reservation": CB}),
    ("eks", "p5.48xlarge", ["us-east-1a", "us-east-1b"], {"reservation": CB, "block": True}),
    ("gke", "g2-standard-24", ["us-central1-a", "us-central1-b"], {"reservation": "r1"}),
])
def test_reserved_pool_spanning_zones_is_refused(spec: dict[str, Any], cluster: str,
                                                 accelerator: str, zones: list[str],
                                                 capacity: dict[str, Any]) -> None:
    """A capacity reservation (an EC2 ODCR, a Capacity Block, a Compute Engine reservation)
    holds capacity in one zone: a pool that spans zones launches only in the reservation's.
    AWS: "Capacity Blocks are delivered as targeted Capacity Reservations in a single
    Availability Zone" (EC2 User Guide, capacity-blocks-using) and EKS: "only specify the subnet
    in the same Availability Zone as the capacity reservation" (EKS user guide,
    capacity-blocks-mng). Google Cloud: "reservations ... in a specific zone"
    (https://cloud.google.com/compute/docs/instances/reservations-overview)."""
    spec["pools"] = [pool(name="r", cluster=cluster, accelerator=accelerator, zone=None,
                          zones=zones, placement="none", fabric="off", capacity=capacity)]
    p = at(spec, "pools 'r'.zones")
    assert "reservation" in p.message and "zone" in p.message
    assert "reservation's zone" in p.hint


# -- EKS add-on pins ------------------------------------------------------------------------------
def test_addon_pins_are_dated_sourced_and_fit_efa_only(cat: Catalog) -> None:
    """EFA-only interfaces need VPC CNI 1.18.5 or later (EKS user guide, node-efa, "EFA and
    EFA-only interfaces": "You must have VPC CNI version 1.18.5 or later for EFA-only
    interfaces"; the fix is aws/amazon-vpc-cni-k8s v1.18.5, #3047 "Filter out interfaces with
    no ip info"). Every pinned vpc-cni must be at least that."""
    addons = cat.eks_addons
    assert addons.source and addons.as_of
    assert addons.default_kubernetes_version in addons.versions
    for version in addons.versions:
        pins = addons.pins(version)
        assert set(pins) == {"vpc-cni", "kube-proxy", "coredns"}
        assert pins["kube-proxy"].startswith(f"v{version}.")
        cni = tuple(int(x) for x in pins["vpc-cni"].lstrip("v").split("-")[0].split("."))
        assert cni >= (1, 18, 5)


def test_eks_version_without_addon_pins_is_refused(spec: dict[str, Any]) -> None:
    spec["clusters"][1]["kubernetes_version"] = "1.29"
    p = at(spec, "clusters 'eks'.kubernetes_version")
    assert "1.29" in p.message and "add-on" in p.message
    assert "1.33" in p.accepted


# -- Capacity Block prices ----------------------------------------------------------------------
def test_capacity_block_pool_is_costed_at_the_capacity_block_price(spec: dict[str, Any],
                                                                  cat: Catalog) -> None:
    """A Capacity Block is paid at its reservation rate, not the On-Demand price (AWS, "Amazon
    EC2 Capacity Blocks for ML Pricing", https://aws.amazon.com/ec2/capacityblocks/pricing/)."""
    spec["pools"] = [aws_pool(nodes=2, capacity={"reservation": CB, "block": True})]
    pool_ = validate_fleet(spec).pools[0]
    price = cat.capacity_block_prices["p5.48xlarge"]
    assert price.source.startswith("https://aws.amazon.com/ec2/capacityblocks/pricing")
    assert price.as_of and price.region == "us-east-1"
    assert pool_.monthly_usd == pytest.approx(price.instance_hour_usd * 2 * 730)
    on_demand = cat.monthly_usd(pool_.shape, 2)
    assert on_demand is not None and pool_.monthly_usd != pytest.approx(on_demand)


def test_unconfirmed_capacity_block_prices_say_so(cat: Catalog) -> None:
    """Capacity Block prices move with supply and demand and are fixed when a block is bought;
    the figures read could not be confirmed as current, and the data says so."""
    for price in cat.capacity_block_prices.values():
        assert not price.confirmed and "confirm" in price.note


def test_capacity_block_without_a_price_is_unpriced_not_on_demand(spec: dict[str, Any],
                                                                  cat: Catalog) -> None:
    spec["pools"] = [aws_pool(accelerator="p6-b200.48xlarge",
                              capacity={"reservation": CB, "block": True})]
    assert "p6-b200.48xlarge" not in cat.capacity_block_prices
    assert validate_fleet(spec).pools[0].monthly_usd is None
