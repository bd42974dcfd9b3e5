"""The machine types added for issue 20 item 15 build as GKE and EKS pools (under Pulumi's
mocks): GKE guest accelerators from the catalog's GKE accelerator name and GPU count, no
GPUDirect networks where the catalog has none, EKS node groups of the instance type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import run_plan
from fleet.inventory import build_inventory

STACK = """config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-ml-prod, region: us-central1}
      aws: {account: "123456789012", region: us-east-2}
    clusters:
      - {name: gke, cloud: gcp, authorized_cidrs: [198.51.100.0/24]}
      - {name: eks, cloud: aws, authorized_cidrs: [198.51.100.0/24]}
    teams:
      - {name: ml}
    pools:
      - {name: l4-small, cluster: gke, team: ml, accelerator: g2-standard-4, nodes: 1,
         zone: us-central1-a}
      - {name: h100-one, cluster: gke, team: ml, accelerator: a3-highgpu-1g, nodes: 1,
         zone: us-central1-a, capacity: spot}
      - {name: edge, cluster: gke, team: ml, accelerator: a3-edgegpu-8g, nodes: 1,
         zone: us-central1-b}
      - {name: t4, cluster: eks, team: ml, accelerator: g4dn.12xlarge, nodes: 1,
         zone: us-east-2a}
      - {name: t4-gke, cluster: gke, team: ml, accelerator: n1-standard-16-t4x2, nodes: 2,
         zone: us-central1-b}
      - {name: t4-one, cluster: gke, team: ml, accelerator: nvidia-tesla-t4, nodes: 1,
         zone: us-central1-c, capacity: spot}
"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = Path(tmp_path_factory.mktemp("new")) / "Pulumi.newtypes.yaml"
    path.write_text(STACK, encoding="utf-8")
    return run_plan(path)


@pytest.mark.parametrize(("pool", "accelerator", "count"), [
    ("l4-small", "nvidia-l4", 1), ("h100-one", "nvidia-h100-80gb", 1),
    ("edge", "nvidia-h100-80gb", 8), ("t4-gke", "nvidia-tesla-t4", 2),
    ("t4-one", "nvidia-tesla-t4", 1)])
def test_gke_pools_attach_the_catalog_gpus(plan: Any, pool: str, accelerator: str,
                                           count: int) -> None:
    pools = {r.inputs["name"]: r.inputs for r in plan.of_type("gcp:container/nodePool:NodePool")}
    cfg = pools[pool]["nodeConfig"]
    [ga] = cfg["guestAccelerators"]
    assert (ga["type"], ga["count"]) == (accelerator, count)
    assert "additionalNodeNetworkConfigs" not in pools[pool].get("networkConfig", {})


def test_eks_node_group_of_g4dn(plan: Any) -> None:
    groups = [r.inputs for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")
              if r.inputs.get("instanceTypes") == ["g4dn.12xlarge"]]
    assert len(groups) == 1
    assert groups[0]["amiType"].endswith("NVIDIA")


@pytest.mark.parametrize(("pool", "machine"), [("t4-gke", "n1-standard-16"),
                                               ("t4-one", "n1-standard-8")])
def test_gke_t4_pools_ask_for_the_n1_machine_and_select_its_real_labels(
        plan: Any, pool: str, machine: str) -> None:
    """GKE is given the N1 machine type (never the catalog's key n1-standard-16-t4x2) and the
    T4s as a guest accelerator; the inventory selects the labels GKE puts on such a node."""
    pools = {r.inputs["name"]: r.inputs for r in plan.of_type("gcp:container/nodePool:NodePool")}
    assert pools[pool]["nodeConfig"]["machineType"] == machine
    [entry] = [p for p in build_inventory(plan.fleet, plan.stack).pools if p.name == pool]
    assert entry.node_selector.items() >= {
        "cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
        "node.kubernetes.io/instance-type": machine}.items()
    assert entry.devices_per_node == {"t4-gke": 2, "t4-one": 1}[pool]
