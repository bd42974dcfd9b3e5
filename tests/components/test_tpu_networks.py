"""TPU clusters and Cloud TPU VMs as the references build them (issue 20, item 8): their VPC
at MTU 8896 (xpk / tpu-recipes TPU guides: `gcloud compute networks create ... --mtu=8896`;
Compute Engine's default is 1460), and what `runtime: tpu-vm` cannot build refused rather than
built otherwise: a Multislice (one queued resource, not N independent VMs) and a named
reservation (tpu.V2Vm has no reservation name)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import run_plan
from tests.fleet.conftest import BASE, only, pool

NETWORK = "gcp:compute/network:Network"
TPU_ONLY = """config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-test-proj, region: us-central1}
    clusters:
      - {name: tpu, cloud: gcp, authorized_cidrs: [198.51.100.0/24]}
      - {name: cpu, cloud: gcp, authorized_cidrs: [198.51.100.0/24],
         network: {cidr: 10.1.0.0/16, pods_cidr: 10.4.0.0/14, services_cidr: 10.8.0.0/20}}
    teams:
      - name: ml
    pools:
      - {name: v5p, cluster: tpu, team: ml, accelerator: v5p, topology: 2x2x2,
         zone: us-central1-a}
      - {name: batch, cluster: cpu, team: ml, accelerator: n2-standard-8, nodes: 1,
         zone: us-central1-a}
      - {name: vm, runtime: tpu-vm, team: ml, accelerator: v6e 2x4, zone: us-central1-b}
"""


@pytest.fixture
def spec() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def test_tpu_cluster_and_tpu_vm_networks_take_mtu_8896(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.tpus.yaml"
    stack.write_text(TPU_ONLY)
    vpcs = {r.inputs["name"]: r.inputs for r in run_plan(stack).of_type(NETWORK)}
    assert vpcs["tpu-vpc"]["mtu"] == 8896
    assert vpcs["tpu-vms-vpc"]["mtu"] == 8896
    assert "mtu" not in vpcs["cpu-vpc"]  # no TPU, no GPUDirect: Compute Engine's default


def test_tpu_vm_multislice_is_refused(spec) -> None:
    spec["pools"] = [pool(name="vm", cluster=None, runtime="tpu-vm", accelerator="v5p",
                          topology="2x2x2", nodes=None, multislice=2)]
    p = only(spec, "pools 'vm'.multislice")
    assert "independent" in p.message and "queued resource" in p.message
    assert "runtime: tpu-vm" in p.hint


def test_tpu_vm_named_reservation_is_refused_not_dropped(spec) -> None:
    spec["pools"] = [pool(name="vm", cluster=None, runtime="tpu-vm", accelerator="v6e 2x4",
                          nodes=None, zone="us-central1-b",
                          capacity={"reservation": "my-v6e-reservation"})]
    p = only(spec, "pools 'vm'.capacity.reservation")
    assert "my-v6e-reservation" in p.message and "dropped" in p.message
