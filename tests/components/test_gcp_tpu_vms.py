"""Cloud TPU VMs (`runtime: tpu-vm`): shapes as the Cloud TPU API makes them, capacity the
pulumi-gcp provider can express; TPU7x refused (the Cloud TPU API does not take it).

References (read 2026-11-23):
- https://docs.cloud.google.com/tpu/docs/v6e and /v5e: an 8-chip slice (v6e-8, v5litepod-8,
  topology 2x4) is one VM with 8 chips (ct6e-standard-8t, ct5lp-hightpu-8t); larger slices use
  4-chip VMs.
- https://docs.cloud.google.com/tpu/docs/create-tpu-vm (read 2026-11-27): "The Cloud TPU API
  is not supported on TPU7x and later TPU versions" (tpu.V2Vm is that API), so a tpu7x TPU VM
  is refused with the fix (fleet/catalog/data/support.yaml `runtime_refusals`).
- Flex-start and queued TPU VMs are queued resources; `gcloud alpha compute tpus
  queued-resources create` takes --provisioning-model, --max-run-duration, --service-account,
  --shielded-secure-boot, --labels and --node-count, but pulumi-gcp's tpu.V2QueuedResource
  (10.2.0, the version installed) has none of them: a queued TPU VM would run as the default
  compute service account without secure boot, and flex-start cannot be asked for. So they
  are refused, with the fix named (run the slice in GKE, where both work).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import run_plan
from fleet import validate_fleet
from fleet.inventory import build_inventory
from tests.fleet.conftest import BASE, pool
from tests.fleet.test_rules import only

STACK = """config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-test-proj, region: us-central1}
    teams:
      - name: ml
    pools:
      - {name: v6e8, runtime: tpu-vm, team: ml, accelerator: v6e 2x4, zone: us-central1-b}
      - {name: v5e8, runtime: tpu-vm, team: ml, accelerator: v5e, topology: 2x4,
         zone: us-central1-a, capacity: spot}
"""


@pytest.fixture
def spec() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def vm_spec(**fields: object) -> dict[str, object]:
    return pool(cluster=None, runtime="tpu-vm", **fields)


@pytest.mark.parametrize(("accelerator", "machine"), [("v6e 2x4", "ct6e-standard-8t"),
                                                      ("v5e-8", "ct5lp-hightpu-8t")])
def test_an_8_chip_tpu_vm_slice_is_one_vm(spec, accelerator: str, machine: str) -> None:
    spec["pools"] = [vm_spec(name="vm", accelerator=accelerator, nodes=None)]
    [p] = validate_fleet(spec).pools
    assert (p.shape.hosts, p.shape.devices_per_host, p.shape.machine_type) == (1, 8, machine)
    [inv] = build_inventory(validate_fleet(spec), "s").pools
    assert (inv.nodes, inv.hosts_per_slice, inv.devices_per_node) == (1, 1, 8)


def test_gke_keeps_its_two_host_2x4(spec) -> None:
    spec["pools"] = [pool(name="g", accelerator="v6e 2x4", nodes=None)]
    assert validate_fleet(spec).pools[0].shape.hosts == 2


def test_larger_tpu_vm_slices_use_4_chip_vms(spec) -> None:
    spec["pools"] = [vm_spec(name="vm", accelerator="v6e", topology="4x4", nodes=None)]
    assert validate_fleet(spec).pools[0].shape.hosts == 4


@pytest.mark.parametrize("capacity", ["flex-start", "queued"])
def test_flex_start_and_queued_tpu_vms_are_refused_with_the_fix(spec, capacity: str) -> None:
    spec["pools"] = [vm_spec(name="vm", accelerator="v6e 2x4", nodes=None, capacity=capacity)]
    p = only(spec, "pools 'vm'.capacity")
    assert "service account" in p.message and "V2QueuedResource" in p.message
    assert "runtime: tpu-vm" in p.hint


def test_a_tpu7x_tpu_vm_is_refused_with_googles_words_and_the_fix(spec) -> None:
    spec["pools"] = [vm_spec(name="iw", accelerator="tpu7x", topology="2x2x1", nodes=None)]
    p = only(spec, "pools 'iw'.runtime")
    assert "tpu7x cannot run as `runtime: tpu-vm`" in p.message
    assert "The Cloud TPU API is not supported on TPU7x" in p.message
    assert "docs.cloud.google.com/tpu/docs/create-tpu-vm" in p.message
    assert "GKE cluster" in p.hint


def test_tpu_vms_in_the_plan(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.vms.yaml"
    stack.write_text(STACK)
    plan = run_plan(stack)
    assert not plan.of_type("gcp:tpu/v2QueuedResource:V2QueuedResource")
    vms = {r.inputs["name"]: r.inputs for r in plan.of_type("gcp:tpu/v2Vm:V2Vm")}
    assert (vms["v6e8"]["acceleratorType"], vms["v6e8"]["runtimeVersion"]) == (
        "v6e-8", "v2-alpha-tpuv6e")
    assert vms["v5e8"]["acceleratorType"] == "v5litepod-8"
    for vm in vms.values():
        assert vm["serviceAccount"]["email"] == "<computed>"  # the dedicated node identity
        assert vm["shieldedInstanceConfig"] == {"enableSecureBoot": True}
        assert vm["labels"]["accelfleet-team"] == "ml"
