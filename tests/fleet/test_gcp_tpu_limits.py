"""Each Cloud TPU generation's largest slice and memory bandwidth, as the Cloud TPU docs give
them (read 2026-11-23):
- v4  https://cloud.google.com/tpu/docs/v4: "TPU Pod size 4096 chips"; HBM2 1200 GBps.
- v5e https://docs.cloud.google.com/tpu/docs/v5e: "TPU Pod size 256 chips" (2D torus, largest
  topology 16x16); "HBM bandwidth per chip 800 GiBps" (859 GB/s; the page's older table said
  819 GBps).
- v5p https://docs.cloud.google.com/tpu/docs/v5p: 8960 chips per Pod, but "The largest job that
  can be scheduled is a 96 cube (6144 chip) job" and "The maximum v5p shape is 16x16x24".
- v6e https://docs.cloud.google.com/tpu/docs/v6e: 256 chips per Pod (16x16); "HBM bandwidth per
  chip 1638 GBps".
- tpu7x https://docs.cloud.google.com/tpu/docs/tpu7x: "9,216-chip footprint per Pod"; xpk's
  system_characteristics.py (AI-Hypercomputer/xpk@367c838) allows 144 cubes, 9216 chips.
"""

from __future__ import annotations

from math import prod

import pytest

from fleet import validate_fleet
from fleet.catalog import load_catalog
from tests.fleet.conftest import pool
from tests.fleet.test_rules import only

LARGEST = {"v4": 4096, "v5e": 256, "v5p": 6144, "v6e": 256, "tpu7x": 9216}


@pytest.mark.parametrize(("gen", "chips"), sorted(LARGEST.items()))
def test_largest_slice_of_each_generation_is_the_documented_one(gen: str, chips: int) -> None:
    cat = load_catalog()
    largest = max(prod(int(s) for s in t.split("x")) for t in cat.topologies(gen))
    assert largest == chips


def test_v5p_stops_at_16x16x24() -> None:
    cat = load_catalog()
    shape = cat.tpu_slice("v5p", "16x16x24")
    assert (shape.chips, shape.hosts) == (6144, 1536)
    assert cat.resolve("v5p-12288").topology_str == "16x16x24"


def test_v5p_beyond_6144_chips_is_refused(spec) -> None:
    spec["pools"] = [pool(name="big", accelerator="v5p", topology="4x4x388", nodes=None)]
    p = only(spec, "pools 'big'.topology")
    assert "4x4x388" in p.message
    spec["pools"] = [pool(name="big", accelerator="v5p-16384", nodes=None)]
    assert "v5p-16384" in only(spec, "pools 'big'.accelerator").message
    spec["pools"] = [pool(name="ok", accelerator="v5p", topology="16x16x24", nodes=None)]
    # 1,536 hosts (and the system pool) need a pod range of more than 1,024 /24s
    spec["clusters"][0]["network"] = {"pods_cidr": "10.64.0.0/13"}
    # ... and Kueue sized for 1,536 nodes (7 CPU, 48 GiB) needs a larger system machine
    spec["clusters"][0]["system_pool"] = {"machine_type": "e2-standard-16"}
    assert validate_fleet(spec).pools[0].node_count == 1536


@pytest.mark.parametrize(("key", "gbps"), [("tpu-v5e", 859), ("tpu-v6e", 1638),
                                           ("tpu-v5p", 2765), ("tpu-v4", 1200),
                                           ("tpu7x", 7380)])
def test_tpu_memory_bandwidth_is_the_documented_one(key: str, gbps: float) -> None:
    acc = load_catalog().accelerator(key)
    assert acc.memory_gbps == gbps
    assert "2026" in acc.source  # dated
