"""Issue 27 item 8: TPU v6e and tpu7x slices (multislice too) get the second node network the
references attach (Cluster Toolkit's advanced v6e blueprint `-net-1`; GKE: each Ironwood VM has
two NICs); other generations keep one NIC. The second network's range stays clear of the
GPUDirect networks', so one cluster can hold both."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import Plan, run_plan
from components.gcp._network import gpudirect_cidrs
from components.gcp._tpu_network import TPU_SECOND_CIDR
from fleet.catalog import load_catalog
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
