"""The stack every workload test renders: one pool of each kind the smoke run knows (GPUDirect
TCPX, TCPXO and RDMA, a fabric turned off, plain GKE and EKS GPUs, EFA, TPU single-host,
multi-host and multislice, a Cloud TPU VM and an idle autoscaled pool), and accessors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet import load_fleet
from fleet.inventory import Inventory, build_inventory
from smoke.cluster.workload import RenderedRun, RenderOptions, render_run

POOL_LABEL = "accelfleet.io/pool"
MANAGED = {"app.kubernetes.io/managed-by": "accelfleet"}
REPO = Path(__file__).resolve().parents[2]

STACK = """\
config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-ml-test, region: us-central1}
      aws: {account: "123456789012", region: us-east-1}
    clusters:
      - {name: gke, cloud: gcp}
      - {name: eks, cloud: aws}
    teams:
      - {name: research}
    pools:
      - {name: tcpx, cluster: gke, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a}
      - {name: tcpxo, cluster: gke, team: research, accelerator: a3-megagpu-8g, nodes: 2,
         zone: us-central1-a}
      - {name: rdma, cluster: gke, team: research, accelerator: a3-ultragpu-8g, nodes: 2,
         zone: us-central1-b}
      - {name: tcpx-off, cluster: gke, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a, fabric: "off"}
      - {name: l4, cluster: gke, team: research, accelerator: g2-standard-24, nodes: 1,
         zone: us-central1-a}
      - {name: l4-idle, cluster: gke, team: research, accelerator: g2-standard-24,
         zone: us-central1-a, autoscaling: {min_nodes: 0, max_nodes: 2}}
      - {name: v6e, cluster: gke, team: research, accelerator: v6e 2x2, zone: us-central1-b}
      - {name: v5p, cluster: gke, team: research, accelerator: v5p, topology: 4x4x4,
         zone: us-central1-a}
      - {name: v5p-ms, cluster: gke, team: research, accelerator: v5p, topology: 2x2x2,
         multislice: 2, zone: us-central1-a}
      - {name: v5p-vm, runtime: tpu-vm, team: research, accelerator: v5p, topology: 2x2x1,
         zone: us-central1-a}
      - {name: p5, cluster: eks, team: research, accelerator: p5.48xlarge, nodes: 2,
         zone: us-east-1a}
      - {name: g6, cluster: eks, team: research, accelerator: g6.12xlarge, nodes: 1,
         zone: us-east-1a, fabric: "off"}
"""
SKIPPED = {"l4-idle", "v5p-vm"}


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    path = tmp_path_factory.mktemp("stack") / "Pulumi.smoketest.yaml"
    path.write_text(STACK, encoding="utf-8")
    return build_inventory(load_fleet(str(path)), "smoketest")


@pytest.fixture(scope="module")
def run(inventory: Inventory) -> RenderedRun:
    return render_run(inventory, RenderOptions(run_id="r20261122-1a2b3c", tier=3))


def objects_of(run: RenderedRun, pool: str) -> list[dict[str, Any]]:
    return next(w for w in run.pools if w.pool.name == pool).objects


def job_of(run: RenderedRun, pool: str) -> dict[str, Any]:
    return next(o for o in objects_of(run, pool) if o["kind"] == "Job")


def pod_of(run: RenderedRun, pool: str) -> dict[str, Any]:
    objs = objects_of(run, pool)
    if objs[0]["kind"] == "JobSet":
        return objs[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return job_of(run, pool)["spec"]["template"]


def agent_of(pod: dict[str, Any]) -> dict[str, Any]:
    (agent,) = pod["spec"]["containers"]
    assert agent["name"] == "agent"
    return agent


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def arg_of(container: dict[str, Any], flag: str) -> str | None:
    args = container["args"]
    return args[args.index(flag) + 1] if flag in args else None
