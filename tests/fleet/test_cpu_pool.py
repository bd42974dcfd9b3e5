"""Plain CPU pools: a CPU machine type as `accelerator` gives an untainted pool with no
accelerator, no device plugin, kind "cpu" in the inventory, and a smoke run that skips it.

xpk keeps CPU node pools beside TPU slices the same way (src/xpk/core/nodepool.py, `cpu-np`).
"""

from __future__ import annotations

from typing import Any

import pytest

from fleet import validate_fleet
from fleet.catalog import load_catalog
from fleet.errors import UnknownNameError
from fleet.inventory import build_inventory
from fleet.model import ACCELERATOR_LABEL, POOL_LABEL
from smoke.cluster.workload import RenderOptions, render_run
from tests.fleet.conftest import only, pool


def _with_cpu_pools(spec: dict[str, Any]) -> dict[str, Any]:
    spec["pools"] += [
        pool(name="cpu-batch", accelerator="n2-standard-8", nodes=2,
             taints=[{"key": "example.com/batch", "value": "yes"}]),
        pool(name="cpu-eks", cluster="eks", accelerator="m6i.xlarge", nodes=1,
             zone="us-east-1a", capacity="spot"),
    ]
    return spec


def test_cpu_machine_types_resolve_to_cpu_shapes():
    cat = load_catalog()
    shape = cat.resolve("n2-standard-8", cloud="gcp")
    assert (shape.kind, shape.devices_per_host, shape.machine_type) == ("cpu", 0, "n2-standard-8")
    assert shape.machine is not None and shape.machine.vcpus == 8
    assert cat.resolve("m6i.large", cloud="aws").kind == "cpu"
    # `cpu` is not a pool accelerator of its own: name the machine type.
    with pytest.raises(UnknownNameError):
        cat.resolve("cpu")
    assert all(s.kind == "cpu" for s in cat.shapes(kind="cpu"))
    assert not [s for s in cat.shapes(kind="gpu") if s.kind == "cpu"]


def test_a_cpu_pool_validates_untainted_and_costed(spec):
    fleet = validate_fleet(_with_cpu_pools(spec))
    cpu = next(p for p in fleet.pools if p.name == "cpu-batch")
    assert (cpu.shape.kind, cpu.devices, cpu.node_count, cpu.placement) == ("cpu", 0, 2, "none")
    assert ACCELERATOR_LABEL not in cpu.labels and cpu.labels[POOL_LABEL] == "cpu-batch"
    assert cpu.monthly_usd is not None and cpu.monthly_usd > 0
    assert cpu.summary()["kind"] == "cpu"
    spot = next(p for p in fleet.pools if p.name == "cpu-eks")
    assert spot.monthly_usd is not None and spot.monthly_usd > 0


def test_cpu_pool_inventory_entry_is_kind_cpu(spec):
    inv = build_inventory(validate_fleet(_with_cpu_pools(spec)), "test")
    cpu = inv.pool("cpu-batch")
    assert (cpu.kind, cpu.accelerator, cpu.devices_per_node, cpu.resource) == ("cpu", "cpu", 0, "")
    assert cpu.node_selector == {"node.kubernetes.io/instance-type": "n2-standard-8",
                                 POOL_LABEL: "cpu-batch"}
    # Only the pool's own taints: no accelerator taint to tolerate.
    assert cpu.tolerations == [{"key": "example.com/batch", "operator": "Equal",
                                "value": "yes", "effect": "NoSchedule"}]
    assert inv.pool("cpu-eks").node_selector["node.kubernetes.io/instance-type"] == "m6i.xlarge"
    assert {p.name for p in inv.pools} == {"h100", "cpu-batch", "cpu-eks"}  # no system pools


def test_smoke_render_skips_cpu_pools_with_a_reason(spec):
    inv = build_inventory(validate_fleet(_with_cpu_pools(spec)), "test")
    run = render_run(inv, RenderOptions(run_id="t1"))
    by_pool = {w.pool.name: w for w in run.pools}
    for name in ("cpu-batch", "cpu-eks"):
        assert by_pool[name].kind == "skipped" and by_pool[name].objects == []
        assert "CPU pool" in (by_pool[name].skipped or "")
    assert by_pool["h100"].kind == "job"
    assert "eks" not in run.shared  # nothing to submit on a cluster with only CPU pools


@pytest.mark.parametrize(("field", "value", "words"), [
    ("capacity", "flex-start", "GPU and TPU"),
    ("capacity", "queued", "GPU and TPU"),
    ("driver", "latest", "no GPU driver"),
    ("placement", "compact", "accelerator pools"),
])
def test_cpu_pool_refuses_accelerator_only_fields(spec, field, value, words):
    spec["pools"].append(pool(name="cpu", accelerator="e2-standard-8", **{field: value}))
    p = only(spec, f"pools 'cpu'.{field}")
    assert words in p.message


def test_cpu_pool_needs_nodes(spec):
    spec["pools"].append(pool(name="cpu", accelerator="e2-standard-8", nodes=None))
    p = only(spec, "pools 'cpu'.nodes")
    assert "is required" in p.message
