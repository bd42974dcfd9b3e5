"""GKE DaemonSets accelfleet installs (NCCL installers, NRI device injector) run on every node of
the pools they serve, whatever extra taints those pools carry: each DaemonSet's pod spec is
validated strictly against the Kubernetes schema, and its tolerations must cover every taint of
every pool its node affinity selects (the taints of the recorded real GKE node of its machine
type, GKE's own `cloud.google.com/gke-queued` on flex-start / queued nodes, the pool's `taints`).

Upstream keeps the same blanket toleration (`- operator: "Exists"`) on all three installers and
the injector: GoogleCloudPlatform/container-engine-accelerators@992db81
gpudirect-{tcpx,tcpxo,rdma}/nccl-*-installer.yaml, nri_device_injector/nri-device-injector.yaml.
Toleration matching is Kubernetes' (k8s.io/api core/v1 toleration.go ToleratesTaint): an empty
key with Exists matches every taint; an empty effect matches every effect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from components.engine.plan import Plan
from tests.plans import planned
from tests.smoke.nodes import gke_node

FIXTURE = Path(__file__).parent / "fixtures" / "Pulumi.gcptaints.yaml"
K8S_VERSION = "1.33"


def tolerates(toleration: dict[str, Any], taint: dict[str, str]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return toleration.get("value", "") == taint.get("value", "")


@pytest.fixture(scope="module")
def plan() -> Plan:
    return planned(FIXTURE)


def node_taints(plan: Plan) -> dict[str, list[dict[str, str]]]:
    """GKE accelerator label of each pool -> the taints its nodes carry: a node built from the
    recorded real GKE node of its machine type (tests/smoke/data/nodes: GKE's own GPU taint,
    and on flex-start / queued pools its gke-queued taint) plus the taints the node pool
    declares in the plan."""
    effect = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule",
              "NO_EXECUTE": "NoExecute"}
    out: dict[str, list[dict[str, str]]] = {}
    by_name = {p.name: p for p in plan.fleet.pools}
    for r in plan.of_type("gcp:container/nodePool:NodePool"):
        cfg = r.inputs["nodeConfig"]
        if not cfg.get("guestAccelerators"):  # a CPU (system) pool: no GPU DaemonSet runs there
            continue
        pool = by_name[r.inputs["name"]]
        declared = [{"key": t["key"], "value": t.get("value", ""),
                     "effect": effect[t["effect"]]} for t in cfg["taints"]]
        node = gke_node(f"{pool.name}-0", cfg["machineType"], nodepool=r.inputs["name"],
                        taints=declared, queued=pool.flex_start)
        accelerator = node["metadata"]["labels"]["cloud.google.com/gke-accelerator"]
        assert accelerator == cfg["guestAccelerators"][0]["type"]
        out.setdefault(accelerator, []).extend(node["spec"]["taints"])
    return out


def test_every_daemonset_tolerates_every_taint_of_the_nodes_it_serves(plan: Plan) -> None:
    taints = node_taints(plan)
    assert any(t["effect"] == "NoExecute" for ts in taints.values() for t in ts)
    assert any(t["key"] == "cloud.google.com/gke-queued" for ts in taints.values() for t in ts)
    daemonsets = plan.of_type("kubernetes:apps/v1:DaemonSet")
    assert {d.inputs["metadata"]["name"] for d in daemonsets} == {
        "nccl-tcpx-installer", "nccl-tcpxo-installer", "nccl-rdma-installer", "device-injector"}
    for d in daemonsets:
        obj = {k: d.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        spec = obj["spec"]["template"]["spec"]
        [term] = spec["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        served = term["matchExpressions"][0]["values"]
        assert served and set(served) <= set(taints), (d.name, served)
        for accelerator in served:
            for taint in taints[accelerator]:
                assert any(tolerates(t, taint) for t in spec["tolerations"]), (d.name, taint)
