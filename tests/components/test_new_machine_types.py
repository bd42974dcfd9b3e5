"""The machine types added for issue 20 item 15 build as GKE and EKS pools (under Pulumi's
mocks): GKE guest accelerators from the catalog's GKE accelerator name and GPU count, no
GPUDirect networks where the catalog has none, EKS node groups of the instance type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.plan import run_plan

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
"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = Path(tmp_path_factory.mktemp("new")) / "Pulumi.newtypes.yaml"
    path.write_text(STACK, encoding="utf-8")
    return run_plan(path)


@pytest.mark.parametrize(("pool", "accelerator", "count"), [
    ("l4-small", "nvidia-l4", 1), ("h100-one", "nvidia-h100-80gb", 1),
    ("edge", "nvidia-h100-80gb", 8)])
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
