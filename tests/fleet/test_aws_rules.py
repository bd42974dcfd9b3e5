"""AWS deploy-correctness rules and catalog facts (issue 9): what EC2/EKS would refuse, caught
before any cloud call, each with the reference it comes from."""

from __future__ import annotations

from typing import Any

import pytest

from fleet import validate_fleet
from fleet.catalog import Catalog, load_catalog
from fleet.errors import Problem, SpecError
from tests.fleet.conftest import pool

CB = "cr-0123456789abcdef0"


@pytest.fixture
def cat() -> Catalog:
    return load_catalog()


def problems(spec: dict[str, Any]) -> list[Problem]:
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    return list(err.value.problems)


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
    assert offered == {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge",
                       "p5en.48xlarge", "p6-b200.48xlarge"}
    assert "capacity-blocks" in cat.capacity_blocks_source
