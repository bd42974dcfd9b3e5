"""The gate's re-proof of idle proven nodes on the fake API server (split from test_gate.py):
an idle node is re-proven and a busy one never; on a pool Kueue routes, the re-proof goes
through the owner team's queue at the gate's priority class, and without that class it is
never admitted (an infrastructure error, the node keeps its pass)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleet.labels import (
    GATE_PROOF_ANNOTATION,
    RUN_LABEL,
)
from tests.smoke.gate_cluster import (
    NAMESPACE,
    admitted,
    controller,
    deploy_kueue,
    gated_inventory,
    gke_gated_node,
    h100_report,
    pool,
    proof_jobs,
    routed,
)
from tests.smoke.test_gate import GPU_TAINT, gate_state, node, tainted
from tests.waiting import wait_for


@pytest.fixture(autouse=True)
def _no_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def test_reproof_takes_an_idle_node_and_never_a_busy_one(fake_cluster: Any,
                                                          tmp_path: Path) -> None:
    from fleet.inventory import InventoryGate

    inventory = gated_inventory({"h100-train": InventoryGate(reprove_interval_s=1)})
    idle, busy = "gke-h100-train-0", "gke-h100-train-1"
    for n in (idle, busy):
        fake_cluster.set_node_output(n, h100_report(n, 800.0))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        for n in (idle, busy):
            fake_cluster.add_node_object(gke_gated_node("h100-train", n))
        wait_for(lambda: all(gate_state(fake_cluster, n) == "proven" for n in (idle, busy)))
        fake_cluster.set_node_command(busy, ["python", "-c", "import time; time.sleep(60)"])
        fake_cluster.create("pods", "default", {  # a user's job on `busy`, running
            "metadata": {"name": "user-busy"},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": busy},
                     "tolerations": [GPU_TAINT],
                     "containers": [{"name": "train", "image": "user/train:1",
                                     "command": ["python", "-c", "pass"],
                                     "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})
        wait_for(lambda: fake_cluster.get("pods", "default", "user-busy")["status"].get(
            "phase") == "Running")
        first = {n: json.loads(node(fake_cluster, n)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"] for n in (idle, busy)}
        wait_for(lambda: json.loads(node(fake_cluster, idle)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"] != first[idle], 60)
        assert running.gate.summary.proofs >= 2  # the first proof(s), then the re-proof
    assert json.loads(node(fake_cluster, busy)["metadata"]["annotations"][
        GATE_PROOF_ANNOTATION])["run"] == first[busy]  # never re-proven while it works
    pod = fake_cluster.get("pods", "default", "user-busy")
    assert pod is not None and pod["status"]["phase"] == "Running"  # never evicted
    assert not tainted(fake_cluster, busy) and not tainted(fake_cluster, idle)
    assert gate_state(fake_cluster, idle) == "proven"
    # a pool Kueue does not route: every proof, the re-proof too, is the controller's own Job
    jobs = proof_jobs(fake_cluster)
    assert len(jobs) >= 2  # the first proof(s) and the re-proof
    for job in jobs:
        labels = job["metadata"].get("labels") or {}
        assert job["metadata"]["namespace"] == NAMESPACE
        assert QUEUE_LABEL not in labels and PRIORITY_LABEL not in labels
        assert not job["spec"].get("suspend")


def test_a_reproof_on_a_kueue_routed_pool_goes_through_its_queue_at_the_lowest_priority(
        fake_cluster: Any, tmp_path: Path) -> None:
    """The first proof of a new node runs before any workload can land (no queue); the
    re-proof of an idle proven node is a Job of the owner team's LocalQueue, in its namespace,
    at the gate's WorkloadPriorityClass, created suspended; Kueue admits it and it runs."""
    from fleet import gate as G
    from fleet.inventory import InventoryGate

    inventory = routed(gated_inventory({"h100-train": InventoryGate()}), "h100-train",
                       reprove_interval_s=1)
    gate = pool(inventory, "h100-train").gate
    assert gate is not None and (gate.queue, gate.queue_namespace) == ("research", "research")
    deploy_kueue(fake_cluster, inventory, "ml-gke")
    name = "gke-h100-train-0"
    fake_cluster.set_node_output(name, h100_report(name, 800.0))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke"):
        fake_cluster.add_node_object(gke_gated_node("h100-train", name))
        wait_for(lambda: gate_state(fake_cluster, name) == "proven")
        first = json.loads(node(fake_cluster, name)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"]
        wait_for(lambda: json.loads(node(fake_cluster, name)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"] != first, 60)  # re-proven, through Kueue
        again = json.loads(node(fake_cluster, name)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"]
    jobs = {j["metadata"]["labels"][RUN_LABEL]: j for j in proof_jobs(fake_cluster)}
    new = jobs[first]  # the new node's proof: outside Kueue, in the controller's namespace
    assert new["metadata"]["namespace"] == NAMESPACE
    assert QUEUE_LABEL not in new["metadata"]["labels"] and not new["spec"].get("suspend")
    reproof = jobs[again]
    assert reproof["metadata"]["namespace"] == "research"
    assert reproof["metadata"]["labels"][QUEUE_LABEL] == "research"
    assert reproof["metadata"]["labels"][PRIORITY_LABEL] == G.REPROOF_PRIORITY_CLASS
    assert reproof["spec"]["suspend"] is True  # created suspended: Kueue resumes it
    assert admitted(fake_cluster, reproof)
    assert gate_state(fake_cluster, name) == "proven" and not tainted(fake_cluster, name)
    assert fake_cluster.objects(f"{RUN_LABEL}={again}") == []  # nothing left in research


def test_a_reproof_naming_a_missing_priority_class_is_never_admitted(
        fake_cluster: Any, tmp_path: Path) -> None:
    """Without the WorkloadPriorityClass the stack deploys, Kueue makes no Workload for the
    re-proof: it stays suspended and is retried as an infrastructure error, never a verdict
    (the node keeps its pass)."""
    from fleet.inventory import InventoryGate

    inventory = routed(gated_inventory({"h100-train": InventoryGate()}), "h100-train",
                       reprove_interval_s=1)
    deploy_kueue(fake_cluster, inventory, "ml-gke", priority_class=False)
    name = "gke-h100-train-0"
    fake_cluster.set_node_output(name, h100_report(name, 800.0))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", timeout_s=3) as running:
        fake_cluster.add_node_object(gke_gated_node("h100-train", name))
        wait_for(lambda: gate_state(fake_cluster, name) == "proven")
        wait_for(lambda: (running.gate.summary.results.get(name) or None) is not None
                 and running.gate.summary.results[name].verdict == "infra", 60)
    queued = [j for j in proof_jobs(fake_cluster) if j["metadata"]["namespace"] == "research"]
    assert queued and not any(admitted(fake_cluster, j) for j in queued)
    assert gate_state(fake_cluster, name) == "proven" and not tainted(fake_cluster, name)
