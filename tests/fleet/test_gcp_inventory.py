"""Inventory tolerations for GKE flex-start and queued pools.

GKE taints the nodes it provisions through flex-start / queued provisioning with
`cloud.google.com/gke-queued=true:NoSchedule`: GoogleCloudPlatform/cluster-toolkit@1047080
modules/compute/gke-node-pool/main.tf ("GKE automatically applies the taint"), and the
workloads of its examples/gke-consumption-options/dws-flex-start-queued-provisioning/
gke-tpu-7x/tpu-7x-test-job.yaml and dws-flex-start/nccl-jobset-example.yaml tolerate it.
"""

from __future__ import annotations

import pytest

from fleet import validate_fleet
from fleet.inventory import build_inventory
from tests.fleet.conftest import pool

QUEUED = {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true",
          "effect": "NoSchedule"}


@pytest.mark.parametrize(("capacity", "tolerated"), [
    ("queued", True), ("flex-start", True), ("on-demand", False), ("spot", False)])
def test_flex_and_queued_pools_tolerate_gke_queued(spec, capacity, tolerated):
    spec["pools"] = [pool(name="g", accelerator="a3-ultragpu-8g", nodes=2, capacity=capacity,
                          zone="us-central1-b"),
                     pool(name="t", accelerator="v5p-128", nodes=None, capacity=capacity)]
    for p in build_inventory(validate_fleet(spec), "s").pools:
        assert (QUEUED in p.tolerations) is tolerated, p.name
