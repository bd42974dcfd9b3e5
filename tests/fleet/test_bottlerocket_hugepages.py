"""Issue 36 "Also": huge pages on EKS GPU nodes by AMI. Bottlerocket sets 110 2 MiB pages per
vCPU on a node with EFA attached (bottlerocket-core-kit corndog compute_hugepages_for_efa, read
2026-11-28): a Bottlerocket EFA node of a machine no node was recorded for offers them, and
its memory for pods shrinks by as much. AL2023's are NOT READ: none counted (never a guess)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fleet.allocatable import bottlerocket_efa_hugepages_mib, node_allocatable
from fleet.catalog import load_catalog
from fleet.rules.validate import validate_fleet

SPEC: dict[str, Any] = {
    "clouds": {"aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "eks", "cloud": "aws", "kubernetes_version": "1.34"}],
    "teams": [{"name": "research"}],
    "pools": [{"name": "g", "cluster": "eks", "team": "research",
               "accelerator": "g6e.12xlarge", "nodes": 2, "zone": "us-east-1a"}],
}


def _pool(**fields: Any) -> Any:
    spec = copy.deepcopy(SPEC)
    spec["pools"][0].update(fields)
    (pool,) = validate_fleet(spec).pools
    return pool


def test_a_bottlerocket_efa_node_offers_110_pages_a_vcpu() -> None:
    catalog = load_catalog()
    br = _pool(ami="bottlerocket")
    assert br.networking is not None and br.networking.kind == "efa"
    vcpus = catalog.host(br.shape).vcpus
    node = node_allocatable(br, catalog)
    assert node.hugepages_2mi_mib == vcpus * 220
    al = node_allocatable(_pool(ami="al2023"), catalog)
    assert al.hugepages_2mi_mib == 0  # NOT READ: never a guess
    assert al.memory_mib - node.memory_mib == vcpus * 220  # huge pages are not pod memory


@pytest.mark.parametrize("fields", [
    {"ami": "bottlerocket", "fabric": "off", "placement": "none"},  # own: no EFA, no pages
    {"ami": None},  # own: the default AMI (AL2023)
])
def test_own_no_pages_without_bottlerocket_and_efa(fields: dict[str, Any]) -> None:
    pool = _pool(**{k: v for k, v in fields.items() if v is not None})
    assert bottlerocket_efa_hugepages_mib(pool, 48) == 0


def test_own_the_formula_matches_the_recorded_al2_nodes() -> None:
    """The recorded p5.48xlarge (192 vCPUs) and p4de.24xlarge (96) offer what Bottlerocket's
    formula gives, within one 2 MiB page: the recorded rows hold for Bottlerocket too."""
    from fleet.allocatable import hugepages_2mi_mib

    for machine, vcpus in (("p5.48xlarge", 192), ("p4de.24xlarge", 96)):
        assert abs(hugepages_2mi_mib(machine) - vcpus * 220) <= 2
