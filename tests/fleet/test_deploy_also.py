"""Issue 36, "Also": what validate shows is what the deploy builds, and a refusal says why.

- An EKS system pool without zones of its own goes to the account's first two zones EKS
  accepts for its control plane (components/aws/_layout.py cluster_zones): validate shows
  them as the account's, never the pools' zones it used to show.
- A machine type the catalog leaves out is refused with its reason
  (fleet/catalog/data/not_built.yaml), not as an unknown name."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fleet.catalog import not_built
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import BASE, pool, problems


def _system(spec: dict[str, Any], cluster: str) -> Any:
    fleet = validate_fleet(spec)
    (system,) = [p for p in fleet.system_pools if p.cluster and p.cluster.name == cluster]
    return system


def test_eks_system_pool_zones_are_the_accounts_not_the_pools(spec: dict[str, Any]) -> None:
    spec["pools"].append(pool(name="g6", cluster="eks", accelerator="g6.xlarge",
                              zone="us-east-1c"))
    assert list(_system(spec, "eks").spec.zones) == []  # decided at deploy, from the account


def test_eks_system_pool_zones_given_are_kept(spec: dict[str, Any]) -> None:
    spec["clusters"][1]["system_pool"] = {"zones": ["us-east-1b", "us-east-1d"]}
    assert list(_system(spec, "eks").spec.zones) == ["us-east-1b", "us-east-1d"]


def test_gke_system_pool_zones_still_follow_the_pools(spec: dict[str, Any]) -> None:
    assert list(_system(spec, "gke").spec.zones) == ["us-central1-a", "us-central1-b"]


@pytest.mark.parametrize(("name", "cluster", "zone", "words"), [
    ("p6e-gb200.36xlarge", "eks", "us-east-1a", "Arm (Grace)"),  # the issue's
    ("a4x-highgpu-4g", "gke", "us-central1-a", "Arm (Grace)"),  # own
    ("trn1.32xlarge", "eks", "us-east-1a", "Trainium"),  # own
])
def test_a_machine_type_left_out_is_refused_with_its_reason(name: str, cluster: str,
                                                            zone: str, words: str) -> None:
    spec = copy.deepcopy(BASE)
    spec["pools"].append(pool(name="x", cluster=cluster, accelerator=name, zone=zone))
    (found,) = [p for p in problems(spec) if p.where.startswith("pools 'x'.accelerator")]
    assert "accelfleet does not build" in found.message and words in found.message
    assert "unknown" not in found.message


def test_every_left_out_type_says_why() -> None:
    assert not_built() and all(why.strip() for why in not_built().values())


def test_a_host_like_a_recorded_node_takes_its_allocatable() -> None:
    """Issue 36 "Also": a p5e derived from hosts.yaml came out ~47 GiB above the recorded p5
    (the formula leaves out what the kernel keeps); a machine of the same host takes the
    recorded node's allocatable, and every such pair is the same host."""
    from fleet.allocatable import _hugepages_like, _recorded, node_allocatable
    from fleet.catalog import load_catalog

    catalog = load_catalog()
    for machine, like in _hugepages_like().items():
        a = catalog.host(catalog.resolve(machine, cloud="aws"))
        b = catalog.host(catalog.resolve(like, cloud="aws"))
        assert (a.vcpus, a.memory_gib) == (b.vcpus, b.memory_gib), machine
    spec = copy.deepcopy(BASE)
    spec["pools"] = [pool(name="p5e", cluster="eks", accelerator="p5e.48xlarge",
                          zone="us-east-1a")]
    (p5e,) = validate_fleet(spec).pools
    node = node_allocatable(p5e, catalog)
    assert node.memory_mib == _recorded()["p5.48xlarge"].memory_mib
    assert node.source.startswith("like recorded p5.48xlarge")
