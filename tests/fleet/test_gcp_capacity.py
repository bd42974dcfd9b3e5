"""Flex-start, queued provisioning and TPU autoscaling: the forms GKE accepts.

References read (snapshots of 2026-06-25):
- GoogleCloudPlatform/cluster-toolkit modules/compute/gke-node-pool/main.tf, the node pool's
  lifecycle preconditions: flex-start needs auto_repair false, no static node count and
  NO_RESERVATION; queued provisioning needs total min 0 and NO_RESERVATION; COMPACT is refused
  with queued provisioning unless on TPUs, and with flex-start except on A3 Ultra, A4 and H4D.
- AI-Hypercomputer/xpk src/xpk/core/capacity.py (get_capacity_arguments_from_capacity_type):
  flex-start pools are `--flex-start --enable-autoscaling --location-policy=ANY
  --reservation-affinity=none --no-enable-autorepair`, plus `--enable-queued-provisioning` for
  queued ones; src/xpk/core/nodepool.py: a TPU slice's max nodes are its VMs, `--num-nodes=0`.
- GKE docs https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest: "To use
  flex-start with queued provisioning, you have to add the --flex-start and
  --enable-queued-provisioning flags".
"""

from __future__ import annotations

from typing import Any

import pytest

from fleet import validate_fleet
from fleet.model import ResolvedPool
from tests.fleet.conftest import pool
from tests.fleet.test_rules import only, problems

ULTRA = {"accelerator": "a3-ultragpu-8g", "zone": "us-central1-b"}  # its zone of us-central1


def resolved(spec: dict[str, Any], name: str) -> ResolvedPool:
    return next(p for p in validate_fleet(spec).pools if p.name == name)


# -- GPU pools ------------------------------------------------------------------------------
@pytest.mark.parametrize("capacity", ["flex-start", "queued"])
def test_flex_and_queued_gpu_pools_autoscale_from_zero_up_to_nodes(spec, capacity):
    spec["pools"] = [pool(name="g", **ULTRA, nodes=4, capacity=capacity)]
    p = resolved(spec, "g")
    assert p.flex_start is True
    assert p.scaling == (0, 4)
    assert p.initial_nodes == 0
    assert p.auto_repair is False


def test_flex_pool_takes_its_maximum_from_autoscaling(spec):
    spec["pools"] = [pool(name="g", **ULTRA, nodes=None,
                          capacity="flex-start", autoscaling={"min_nodes": 0, "max_nodes": 6})]
    assert resolved(spec, "g").scaling == (0, 6)


@pytest.mark.parametrize("capacity", ["flex-start", "queued"])
def test_flex_and_queued_refuse_a_minimum_above_zero(spec, capacity):
    spec["pools"] = [pool(name="g", **ULTRA, nodes=None, capacity=capacity,
                          autoscaling={"min_nodes": 1, "max_nodes": 4})]
    p = only(spec, "pools 'g'.autoscaling")
    assert "from 0" in p.message and "min_nodes: 0" in p.hint


def test_flex_pool_needs_a_maximum(spec):
    spec["pools"] = [pool(name="g", **ULTRA, nodes=0, capacity="flex-start")]
    p = only(spec, "pools 'g'.nodes")
    assert "maximum" in p.message and "max_nodes" in p.hint


def test_flex_pool_may_span_zones_with_any_maximum(spec):
    spec["pools"] = [pool(name="g", accelerator="g2-standard-12", nodes=3, zone=None,
                          zones=["us-central1-a", "us-central1-b"], capacity="flex-start")]
    assert resolved(spec, "g").scaling == (0, 3)  # autoscaled: no per-zone split needed


def test_on_demand_pools_keep_auto_repair_and_a_fixed_size(spec):
    p = resolved(spec, "h100")
    assert (p.flex_start, p.scaling, p.auto_repair, p.initial_nodes) == (False, None, True, 2)


def test_queued_is_flex_start_with_queued_provisioning(spec):
    spec["pools"][0]["capacity"] = {"flex_start": True, "queued": True}
    p = resolved(spec, "h100")  # both flags: accepted, it is what `queued` means
    assert p.flex_start and p.spec.capacity.label == "queued"


def test_queued_gpu_pools_are_not_compact_by_default(spec):
    spec["pools"] = [pool(name="g", **ULTRA, nodes=2, capacity="queued")]
    assert resolved(spec, "g").placement == "none"


def test_queued_gpu_pool_refuses_compact(spec):
    spec["pools"] = [pool(name="g", **ULTRA, nodes=2, capacity="queued",
                          placement="compact")]
    p = only(spec, "pools 'g'.placement")
    assert "queued" in p.message and "placement: none" in p.hint


@pytest.mark.parametrize("machine", ["a3-highgpu-8g", "a3-megagpu-8g"])
def test_flex_start_a3_high_and_mega_are_not_compact(spec, machine):
    spec["pools"] = [pool(name="g", accelerator=machine, nodes=2, capacity="flex-start",
                          zone="us-central1-b")]
    assert resolved(spec, "g").placement == "none"
    spec["pools"][0]["placement"] = "compact"
    p = only(spec, "pools 'g'.placement")
    assert "flex-start" in p.message and machine in p.message
    assert "a3-ultragpu-8g" in p.hint and "a4-highgpu-8g" in p.hint


@pytest.mark.parametrize("machine", ["a3-ultragpu-8g", "a4-highgpu-8g"])
def test_flex_start_a3_ultra_and_a4_stay_compact(spec, machine):
    spec["pools"] = [pool(name="g", accelerator=machine, nodes=2, capacity="flex-start",
                          zone="us-central1-b")]
    assert resolved(spec, "g").placement == "compact"


# -- TPU slices -----------------------------------------------------------------------------
def test_multihost_tpu_autoscales_atomically_between_zero_and_all_hosts(spec):
    spec["pools"] = [pool(name="tpu", accelerator="v5p-128", nodes=None,
                          autoscaling={"min_nodes": 0, "max_nodes": 16})]
    p = resolved(spec, "tpu")
    assert p.scaling == (0, 16)
    assert p.node_count == 16  # a slice that exists has all its hosts


@pytest.mark.parametrize(("lo", "hi"), [(0, 8), (8, 16), (16, 16), (1, 16)])
def test_multihost_tpu_refuses_partial_autoscaling(spec, lo, hi):
    spec["pools"] = [pool(name="tpu", accelerator="v5p-128", nodes=None,
                          autoscaling={"min_nodes": lo, "max_nodes": hi})]
    p = only(spec, "pools 'tpu'.autoscaling")
    assert "between 0 and all its 16 hosts" in p.message
    assert "{min_nodes: 0, max_nodes: 16}" in p.hint


@pytest.mark.parametrize("capacity", ["flex-start", "queued"])
def test_flex_and_queued_tpu_slices_autoscale_without_being_asked(spec, capacity):
    spec["pools"] = [pool(name="tpu", accelerator="v5p-128", nodes=None, capacity=capacity,
                          multislice=2)]
    p = resolved(spec, "tpu")
    assert (p.scaling, p.initial_nodes, p.auto_repair) == ((0, 16), 0, False)
    assert p.placement == "compact"  # TPUs keep COMPACT with queued provisioning


def test_queued_tpu_placement_compact_is_allowed(spec):
    spec["pools"] = [pool(name="tpu", accelerator="v6e 2x2", nodes=None, capacity="queued",
                          placement="compact")]
    assert not [p for p in _problems_or_none(spec) if p.where.endswith("placement")]


def _problems_or_none(spec: dict[str, Any]) -> list[Any]:
    try:
        validate_fleet(spec)
    except Exception:
        return problems(spec)
    return []
