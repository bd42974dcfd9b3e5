"""The gate's pod cache (smoke/gate/_informer.py, issue 35 "Scale") on the real control plane:
the real API server's pod list and watch, the real scheduler and DaemonSet controller, the
node stand-in running the pods and deleting them as a kubelet finishes a graceful deletion.

- a pod bound to a node makes it busy in the cache; once deleted (the stand-in kills it and
  the API server removes it) the node is idle again; a pod that ends (Succeeded) leaves it
  idle; a DaemonSet's pod never makes it busy;
- the controller: a proven node due for its re-proof is not re-proven while a workload runs
  on it (the idle check, answered from the cache, says busy), and is re-proven once the
  workload is deleted.
The hostile answers (410 on every watch, malformed pods, no pod list per node): the fake's
tests/smoke/test_gate_informer.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory import InventoryGate
from fleet.labels import GATE_PROOF_ANNOTATION
from smoke.gate._informer import PodInformer
from tests import waiting
from tests.controlplane.cluster import RealCluster
from tests.smoke.gate_cluster import controller, gated_inventory, gke_gated_node, h100_report

pytestmark = pytest.mark.controlplane
POOL = "h100-train"
CONTEXT = "envtest"
WORK = "work"
SLEEP = ["python", "-c", "import time; time.sleep(300)"]

wait_for = partial(waiting.wait_for, timeout_s=120.0, every_s=0.1)


def _client(kube: RealCluster, tmp_path: Path) -> Any:
    from kubernetes import config

    kc = kube.kubeconfig(tmp_path / "kubeconfig", context=CONTEXT)
    return config.new_client_from_config(config_file=str(kc), context=CONTEXT)


@pytest.fixture
def pods(kube: RealCluster, tmp_path: Path) -> Iterator[PodInformer]:
    from kubernetes import client as k

    stop = threading.Event()
    informer = PodInformer(k.CoreV1Api(_client(kube, tmp_path)), stop, watch_timeout_s=30)
    thread = threading.Thread(target=informer.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: informer.synced.is_set())
        yield informer
    finally:
        stop.set()
        thread.join(60)


def _pod(kube: RealCluster, node: str, name: str) -> dict[str, Any]:
    return kube.create("pods", WORK, {"metadata": {"name": name}, "spec": {
        "nodeName": node, "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "c", "image": "trainer:1", "command": ["true"]}]}})


def _phase(kube: RealCluster, name: str) -> str:
    got = kube.get("pods", WORK, name) or {}
    return str((got.get("status") or {}).get("phase") or "")


def test_a_bound_pod_makes_its_node_busy_and_its_deletion_idle_again(
        kube: RealCluster, pods: PodInformer) -> None:
    node, other = "gke-h100-train-0", "gke-h100-train-1"
    for n in (node, other):
        kube.add_node_object(gke_gated_node(POOL, n))
    assert pods.idle(node) and pods.idle(other)
    kube.set_node_command(node, SLEEP)
    _pod(kube, node, "train")
    wait_for(lambda: _phase(kube, "train") == "Running")
    wait_for(lambda: [r.phase for r in pods.busy(node)] == ["Running"])
    assert pods.idle(other)
    kube.delete("pods", WORK, "train")  # graceful: the stand-in kills it, then it is gone
    wait_for(lambda: kube.get("pods", WORK, "train") is None)
    wait_for(lambda: pods.idle(node))
    assert node not in pods.by_node
    # a pod that ends leaves its node idle (the stand-in writes Succeeded)
    kube.set_node_command(other, ["python", "-c", "pass"])
    _pod(kube, other, "once")
    wait_for(lambda: _phase(kube, "once") == "Succeeded")
    wait_for(lambda: pods.idle(other))
    assert pods.lists == 1  # followed on the watch


def test_a_daemonsets_pod_never_makes_a_node_busy(kube: RealCluster,
                                                  pods: PodInformer) -> None:
    node = "gke-h100-train-0"
    kube.add_node_object(gke_gated_node(POOL, node))
    kube.set_node_command(node, SLEEP)
    labels = {"app": "node-agent", "accelfleet.io/test-made": "1"}
    kube.create("daemonsets", WORK, {"metadata": {"name": "node-agent", "labels": labels},
                                     "spec": {"selector": {"matchLabels": {"app": "node-agent"}},
                                              "template": {"metadata": {"labels": labels},
                                                           "spec": {
        "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "agent", "image": "agent:1", "command": ["true"]}]}}}})
    try:
        def agent_running() -> bool:
            items = kube.list("pods", WORK, "app=node-agent").get("items") or []
            return any(p["spec"].get("nodeName") == node
                       and (p.get("status") or {}).get("phase") == "Running" for p in items)

        wait_for(agent_running)
        wait_for(lambda: len(pods) >= 1)
        assert pods.idle(node)
        assert all(r.daemonset for r in (pods.pods[k] for k in pods.by_node[node]))
    finally:
        kube.delete("daemonsets", WORK, "node-agent", propagation="Background")


def test_a_due_node_is_reproven_only_once_its_workload_is_deleted(
        kube: RealCluster, tmp_path: Path) -> None:
    # due 30 s after its proof: the workload lands before (no re-proof races it: a proof's
    # pods on this node would run the workload's command too)
    inventory = gated_inventory({POOL: InventoryGate(reprove_interval_s=30)})
    n = "gke-h100-train-0"
    kube.set_node_output(n, h100_report(n, 800.0))

    def run_of() -> str:
        got = kube.get("nodes", "", n) or {}
        text = ((got.get("metadata") or {}).get("annotations") or {}).get(
            GATE_PROOF_ANNOTATION)
        return str(json.loads(text)["run"]) if text else ""

    with controller(kube, tmp_path, inventory, "ml-gke", context=CONTEXT) as running:
        kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: run_of() != "")
        gate = running.gate
        answers: list[bool] = []
        idle = gate._idle

        def recorded(name: str) -> bool:
            got = idle(name)
            if name == n:
                answers.append(got)
            return got

        gate._idle = recorded  # type: ignore[method-assign]
        # a workload lands (the proofs' pods ran the recorded report; this one sleeps)
        kube.set_node_command(n, SLEEP)
        kube.create("pods", WORK, {"metadata": {"name": "train"}, "spec": {
            "nodeName": n, "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "trainer:1", "command": SLEEP}]}})
        wait_for(lambda: _phase(kube, "train") == "Running")
        held = run_of()
        wait_for(lambda: answers.count(False) >= 3)  # due, asked, and busy, three times
        assert run_of() == held and gate.inflight.get(n) is None  # never re-proven
        kube.kubelet.commands.pop(n, None)  # the node's proofs print their report again
        kube.delete("pods", WORK, "train")
        wait_for(lambda: kube.get("pods", WORK, "train") is None)
        wait_for(lambda: run_of() != held)  # idle again: re-proven
    assert True in answers
