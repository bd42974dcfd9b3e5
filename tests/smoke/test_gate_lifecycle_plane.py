"""A gated node's lifecycle on the real control plane (issue 35), where the behaviour is the
API's: the failed node's taints and cordon as the real API server merges them and the real
scheduler honours them, the gate's node condition beside the kubelet's own status updates, a
pending team pod that binds only after the fresh proof, a shadow pool whose nodes take work at
once, and an open pool's new node that the controller opens."""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from fleet.gate import InventoryGate
from fleet.labels import (
    GATE_CONDITION,
    GATE_LABEL,
    GATE_TAINT_KEY,
    GATE_UNDO_ANNOTATION,
    SMOKE_KEY,
    STARTUP_TAINT_PREFIX,
)
from tests import waiting
from tests.controlplane.cluster import RealCluster
from tests.smoke.gate_cluster import (
    NAMESPACE,
    client_of,
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
)

pytestmark = pytest.mark.controlplane

POOL = "h100-train"
FAILED_TAINT = {"key": "accelfleet.io/gate", "value": "failed", "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.fixture(autouse=True)
def _no_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))


# patience on the real plane (its controllers' own periods, under load)
wait_for = partial(waiting.wait_for, timeout_s=90.0, every_s=0.1)


def node(kube: RealCluster, name: str) -> dict[str, Any]:
    got = kube.get("nodes", "", name)
    assert got is not None, name
    return got


def state(kube: RealCluster, name: str) -> str:
    return str((node(kube, name)["metadata"].get("labels") or {}).get(GATE_LABEL, ""))


def cond(kube: RealCluster, name: str) -> dict[str, Any]:
    return next((c for c in node(kube, name)["status"].get("conditions") or []
                 if c["type"] == GATE_CONDITION), {})


def team_pod(kube: RealCluster, name: str) -> None:
    """A team's pod for the pool: its node selector and the GPU toleration, nothing of the
    gate's."""
    kube.create("pods", "team", {
        "metadata": {"name": name},
        "spec": {"nodeSelector": {"accelfleet.io/pool": POOL}, "tolerations": [GPU_TAINT],
                 "restartPolicy": "Never",
                 "containers": [{"name": "train", "image": "team/train:1",
                                 "command": ["python", "-c", "import time; time.sleep(2)"],
                                 "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})


def bound_to(kube: RealCluster, pod: str) -> str:
    return str(((kube.get("pods", "team", pod) or {}).get("spec") or {}).get("nodeName") or "")


def test_a_failed_node_is_held_by_its_own_taint_and_cordon_and_serves_after_a_fresh_proof(
        kube: RealCluster, tmp_path: Path) -> None:
    from smoke.cluster.release import release

    n = "gke-h100-train-0"
    kube.set_node_output(n, h100_report(n, 300.0))  # below the H100 floor
    with controller(kube, tmp_path, gated_inventory(), "ml-gke") as running:
        kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: (node(kube, n)["metadata"].get("labels") or {}).get(SMOKE_KEY)
                 == "failed")
        got = node(kube, n)
        keys = [t["key"] for t in got["spec"].get("taints") or []]
        assert not any(k.startswith(STARTUP_TAINT_PREFIX) for k in keys)  # merged whole
        assert FAILED_TAINT in got["spec"]["taints"] and got["spec"]["unschedulable"] is True
        # the controller-manager's own taint for a cordoned node follows (the fake adds none)
        wait_for(lambda: "node.kubernetes.io/unschedulable" in [
            t["key"] for t in node(kube, n)["spec"].get("taints") or []])
        team_pod(kube, "train-a")
        wait_for(lambda: any(c.get("reason") == "Unschedulable" for c in (kube.get(
            "pods", "team", "train-a") or {}).get("status", {}).get("conditions") or []))
        assert bound_to(kube, "train-a") == ""  # the real scheduler keeps it off
        time.sleep(2.0)  # the stand-in kubelet writes status meanwhile: the condition stays
        assert (cond(kube, n).get("status"), cond(kube, n).get("reason")) == (
            "False", "ProofFailed")
        proofs = running.gate.summary.proofs
        kube.set_node_output(n, h100_report(n, 800.0))  # repaired
        report = release({"ml-gke": client_of(kube, tmp_path)}, nodes=[n])
        assert [a.state for a in report.actions] == ["released"]
        wait_for(lambda: bound_to(kube, "train-a") == n)  # only after the fresh pass
        assert running.gate.summary.proofs > proofs
    assert state(kube, n) == "proven"
    got = node(kube, n)
    assert not got["spec"].get("unschedulable")
    assert not any(t["key"] in (GATE_TAINT_KEY, FAILED_TAINT["key"], SMOKE_KEY)
                   for t in got["spec"].get("taints") or [])
    assert GATE_UNDO_ANNOTATION not in (got["metadata"].get("annotations") or {})


def test_a_shadow_pool_takes_work_at_once_and_is_proven_when_idle(
        kube: RealCluster, tmp_path: Path) -> None:
    n = "gke-h100-train-0"
    kube.set_node_output(n, h100_report(n, 800.0))
    raw = gke_gated_node(POOL, n)
    raw["spec"]["taints"] = [t for t in raw["spec"]["taints"] if t["key"] != GATE_TAINT_KEY]
    inventory = gated_inventory({POOL: InventoryGate(mode="shadow")})
    with controller(kube, tmp_path, inventory, "ml-gke") as running:
        kube.add_node_object(raw)
        team_pod(kube, "train-b")
        wait_for(lambda: bound_to(kube, "train-b") == n)  # nothing holds a shadow node
        wait_for(lambda: state(kube, n) == "proven")  # once the team's pod is done
        wait_for(lambda: n in running.gate.summary.results)
        assert running.gate.summary.results[n].verdict == "pass"
    got = node(kube, n)
    assert (got["metadata"]["labels"] or {}).get("accelfleet.io/gate-mode") == "shadow"
    assert not got["spec"].get("unschedulable")
    assert not any(t["key"] in (GATE_TAINT_KEY, FAILED_TAINT["key"])
                   for t in got["spec"].get("taints") or [])
    pod = kube.get("pods", "team", "train-b")
    assert pod is not None and pod["status"].get("phase") == "Succeeded"  # never evicted


def test_a_node_joining_an_open_pool_is_opened_and_takes_work(kube: RealCluster,
                                                              tmp_path: Path) -> None:
    from smoke.gate.session import GateRequest, open_pool

    inventory = gated_inventory()
    kube.ensure_namespace(NAMESPACE)
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(inventory.to_dict()), encoding="utf-8")
    kc = kube.kubeconfig(tmp_path / "kubeconfig-cli", context="envtest")
    request = GateRequest(inventory=inv, kubeconfig=kc, contexts={"ml-gke": "envtest"},
                          cluster="ml-gke", namespace=NAMESPACE)
    assert open_pool(request, POOL, reason="INC-9", by="ops@test") == []  # no node yet
    n = "gke-h100-train-0"
    with controller(kube, tmp_path, inventory, "ml-gke") as running:
        kube.add_node_object(gke_gated_node(POOL, n))
        team_pod(kube, "train-c")
        wait_for(lambda: bound_to(kube, "train-c") == n)
        assert state(kube, n) == "open" and running.gate.summary.proofs == 0
