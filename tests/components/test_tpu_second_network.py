"""Issue 27 item 8: TPU v6e and tpu7x slices (multislice too) get the second node network the
references attach (Cluster Toolkit's advanced v6e blueprint `-net-1`; GKE: each Ironwood VM has
two NICs); other generations keep one NIC. The second network's range stays clear of the
GPUDirect networks', so one cluster can hold both. Cloud TPU VMs (runtime: tpu-vm) of those
generations get it too, as a second entry of tpu.V2Vm `networkConfigs` (Cloud TPU API V2.Node
`network_configs`, https://cloud.google.com/php/docs/reference/cloud-tpu/latest/V2.Node, read
2026-11-27)."""

from __future__ import annotations

import copy
import ipaddress
from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import Plan, run_plan
from components.gcp._build import TPU_VM_CIDR
from components.gcp._network import gpudirect_cidrs
from components.gcp._tpu_network import TPU_SECOND_CIDR, TPU_VM_SECOND_CIDR
from fleet import validate_fleet
from fleet.catalog import load_catalog
from fleet.rules.unique_names import derived_names
from fleet.spec.fields import FleetSpec
from tests.fleet.conftest import BASE, pool
from tests.stacks import ONE_GKE_CLUSTER

STACK = ONE_GKE_CLUSTER + """\
    pools:
      - {name: v6e, cluster: c1, team: research, accelerator: v6e, topology: 4x4,
         multislice: 2, zone: us-central1-b}
      - {name: v5p, cluster: c1, team: research, accelerator: v5p, topology: 2x2x2,
         zone: us-central1-a}
      - {name: h100, cluster: c1, team: research, accelerator: a3-highgpu-8g, nodes: 1,
         zone: us-central1-a}
"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    path = Path(tmp_path_factory.mktemp("tpunet")) / "Pulumi.tpunet.yaml"
    path.write_text(STACK, encoding="utf-8")
    return run_plan(path)


def _pools(plan: Plan) -> dict[str, dict[str, Any]]:
    return {r.inputs["name"]: r.inputs for r in plan.of_type("gcp:container/nodePool:NodePool")}


def test_every_v6e_slice_attaches_the_second_network(plan: Plan) -> None:
    pools = _pools(plan)
    for name in ("v6e-s0", "v6e-s1"):
        (extra,) = pools[name]["networkConfig"]["additionalNodeNetworkConfigs"]
        assert extra == {"network": "c1-tpu-net-1", "subnetwork": "c1-tpu-sub-1"}
    assert "additionalNodeNetworkConfigs" not in pools["v5p"]["networkConfig"]
    (cluster,) = plan.of_type("gcp:container/cluster:Cluster")
    assert cluster.inputs["enableMultiNetworking"] is True


def test_the_second_network_is_one_vpc_with_its_own_range(plan: Plan) -> None:
    (subnet,) = [r.inputs for r in plan.of_type("gcp:compute/subnetwork:Subnetwork")
                 if r.inputs["name"] == "c1-tpu-sub-1"]
    assert subnet["ipCidrRange"] == TPU_SECOND_CIDR
    (vpc,) = [r.inputs for r in plan.of_type("gcp:compute/network:Network")
              if r.inputs["name"] == "c1-tpu-net-1"]
    assert vpc["autoCreateSubnetworks"] is False
    mine = ipaddress.ip_network(TPU_SECOND_CIDR)
    assert not any(mine.overlaps(ipaddress.ip_network(c))
                   for c in gpudirect_cidrs(load_catalog()).values())


def test_a_cluster_without_those_generations_has_none(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.v5p.yaml"
    path.write_text(ONE_GKE_CLUSTER + """\
    pools:
      - {name: v5p, cluster: c1, team: research, accelerator: v5p, topology: 2x2x2,
         zone: us-central1-a}
""", encoding="utf-8")
    assert not [r for r in run_plan(path).resources if "tpu-net" in r.name]


# -- Cloud TPU VMs (runtime: tpu-vm): the same second network, as a second NIC ----------------

VMS = """config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-test-proj, region: us-central1}
    teams:
      - name: ml
    pools:
      - {name: v6e8, runtime: tpu-vm, team: ml, accelerator: v6e 2x4, zone: us-central1-b}
      - {name: v5e8, runtime: tpu-vm, team: ml, accelerator: v5e, topology: 2x4,
         zone: us-central1-a}
"""


@pytest.fixture(scope="module")
def vm_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    path = Path(tmp_path_factory.mktemp("tpuvmnet")) / "Pulumi.tpuvmnet.yaml"
    path.write_text(VMS, encoding="utf-8")
    return run_plan(path)


def test_a_v6e_tpu_vm_has_two_nics(vm_plan: Plan) -> None:
    """The Cloud TPU API takes several NICs as `networkConfigs`, never beside
    `networkConfig` (V2.Node: "mutually exclusive")."""
    vms = {r.inputs["name"]: r.inputs for r in vm_plan.of_type("gcp:tpu/v2Vm:V2Vm")}
    v6e = vms["v6e8"]
    assert "networkConfig" not in v6e
    primary, second = v6e["networkConfigs"]
    assert second == {"network": "tpu-vms-tpu-net-1", "subnetwork": "tpu-vms-tpu-sub-1",
                      "enableExternalIps": False}
    assert primary["enableExternalIps"] is False and primary["network"] != second["network"]
    # v5e: no second network in the references, one NIC as before
    assert "networkConfigs" not in vms["v5e8"] and "network" in vms["v5e8"]["networkConfig"]


def test_the_vms_second_network_is_its_own_vpc_apart_from_their_first(vm_plan: Plan) -> None:
    subnets = {r.inputs["name"]: r.inputs
               for r in vm_plan.of_type("gcp:compute/subnetwork:Subnetwork")}
    assert subnets["tpu-vms-tpu-sub-1"]["ipCidrRange"] == TPU_VM_SECOND_CIDR
    mine = ipaddress.ip_network(TPU_VM_SECOND_CIDR)
    others = [TPU_VM_CIDR, TPU_SECOND_CIDR, *gpudirect_cidrs(load_catalog()).values()]
    assert not any(mine.overlaps(ipaddress.ip_network(c)) for c in others)
    vpcs = {r.inputs["name"]: r.inputs for r in vm_plan.of_type(
        "gcp:compute/network:Network")}
    assert vpcs["tpu-vms-tpu-net-1"]["mtu"] == vpcs["tpu-vms-vpc"]["mtu"] == 8896
    rules = {r.inputs["name"] for r in vm_plan.of_type("gcp:compute/firewall:Firewall")}
    assert "tpu-vms-tpu-net-1-internal" in rules


def test_the_vms_second_network_names_are_known_to_the_unique_names_check() -> None:
    spec = copy.deepcopy(BASE)
    spec["pools"] = [pool(name="vm", cluster=None, runtime="tpu-vm", accelerator="v6e 2x4",
                          nodes=None, zone="us-central1-b")]
    fleet = validate_fleet(spec)
    names = {d.name for d in derived_names(FleetSpec.model_validate(spec), fleet.pools, [])}
    assert {"tpu-vms-tpu-net-1", "tpu-vms-tpu-sub-1", "tpu-vms-tpu-net-1-internal"} <= names
