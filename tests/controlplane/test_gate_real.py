"""The gate end to end on the real control plane (issue 34 item 3; issue 35 "Identity"): the
real API server's admission, the real scheduler binding (or not) by the gate taint, the real
Job controller making the proof's pods, the node stand-in running them.

- a node of a gated pool joins with the startup taint (NotReady, then Ready); a team's Job
  that does not tolerate the gate waits Pending on the scheduler and binds only after the
  gate proved and untainted the node;
- failing nodes stay gated and off work; of more failing nodes than the pool's cap, only cap
  many are quarantined;
- a verdict belongs to the Node object (uid) and its boot (status.nodeInfo.bootID): a node
  deleted and registered again under the same name is proven again, before or during its
  first proof, and a proven node whose boot ID changes (a reboot, an auto-repair) is gated
  again and proven afresh.
"""

from __future__ import annotations

import json
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory import InventoryGate
from fleet.labels import (
    GATE_LABEL,
    GATE_PROOF_ANNOTATION,
    GATE_TAINT_KEY,
    SMOKE_FAILED,
    SMOKE_KEY,
)
from tests import waiting
from tests.controlplane.cluster import RealCluster
from tests.smoke.gate_cluster import (
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
    pool,
)

pytestmark = pytest.mark.controlplane
POOL = "h100-train"
CONTEXT = "envtest"


# patience on the real plane (its controllers' own periods, under load)
wait_for = partial(waiting.wait_for, timeout_s=120.0, every_s=0.1)


def node(kube: RealCluster, name: str) -> dict[str, Any]:
    return kube.get("nodes", "", name) or {"metadata": {}, "spec": {}, "status": {}}


def state(kube: RealCluster, name: str) -> str:
    return str((node(kube, name)["metadata"].get("labels") or {}).get(GATE_LABEL, ""))


def tainted(kube: RealCluster, name: str) -> bool:
    return any(t.get("key") == GATE_TAINT_KEY for t in node(kube, name)["spec"].get(
        "taints") or [])


def held(kube: RealCluster, name: str) -> bool:
    """Off work: the startup taint, or a failed node's own taint and cordon (out of the
    autoscaler's startup-taint prefix: smoke.gate.lifecycle)."""
    from smoke.gate.lifecycle import FAILED_TAINT_KEY

    got = node(kube, name)
    return tainted(kube, name) or (any(
        t.get("key") == FAILED_TAINT_KEY for t in got["spec"].get("taints") or [])
        and bool(got["spec"].get("unschedulable")))


def proof(kube: RealCluster, name: str) -> dict[str, Any]:
    text = (node(kube, name)["metadata"].get("annotations") or {}).get(GATE_PROOF_ANNOTATION)
    return dict(json.loads(text)) if text else {}


def proven(kube: RealCluster, name: str) -> bool:
    return state(kube, name) == "proven" and not tainted(kube, name)


def team_job(name: str, tolerations: list[dict[str, Any]], selector: dict[str, str]
             ) -> dict[str, Any]:
    """A team's Job on the pool: its node selector and its taints tolerated, the gate's not."""
    return {"metadata": {"name": name}, "spec": {"backoffLimit": 0, "template": {
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "tolerations": tolerations, "nodeSelector": selector,
                 "containers": [{"name": "main", "image": "python:3.12",
                                 "command": ["python", "-c", "print('trained')"],
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def team_pod(kube: RealCluster, ns: str, app: str) -> dict[str, Any] | None:
    items = kube.list("pods", ns, f"app={app}")["items"]
    return items[0] if items else None


def scheduled(pod: dict[str, Any] | None) -> dict[str, Any]:
    return next((c for c in ((pod or {}).get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodScheduled"), {})


def test_a_teams_job_waits_for_the_gate_and_binds_once_the_node_is_proven(
        kube: RealCluster, tmp_path: Path) -> None:
    inventory = gated_inventory()
    p = pool(inventory, POOL)
    n = "gke-h100-train-0"
    kube.set_node_output(n, h100_report(n, 800.0))
    tolerations = [dict(t) for t in p.tolerations if t.get("key") != GATE_TAINT_KEY]
    with controller(kube, tmp_path, inventory, "ml-gke", context=CONTEXT):
        kube.create("jobs", "research", team_job("train", tolerations, dict(p.node_selector)))
        kube.add_node_object(gke_gated_node(POOL, n), ready=False)
        # as the create was answered (the lifecycle controller may swap taints right after)
        keys = {t["key"] for t in kube.kubelet.registered[n]["spec"]["taints"]}
        # the node pool's startup taint, and the API server's own not-ready taint
        # (TaintNodesByCondition admission on create)
        assert {GATE_TAINT_KEY, "node.kubernetes.io/not-ready"} <= keys
        # NotReady: the gate leaves it alone, the scheduler too
        pending = wait_for(lambda: scheduled(team_pod(kube, "research", "train")).get(
            "reason") == "Unschedulable" and team_pod(kube, "research", "train"))
        assert not pending["spec"].get("nodeName")
        assert state(kube, n) in ("", "unproven")  # labelled on first sight, never proving
        kube.set_ready(n)
        # Ready and unproven: still Pending, the scheduler names the untolerated taint
        seen_tainted_ready = []

        def bound() -> dict[str, Any] | None:
            pod = team_pod(kube, "research", "train")
            now = node(kube, n)
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in now["status"].get("conditions") or [])
            if ready and tainted(kube, n):
                seen_tainted_ready.append(scheduled(pod).get("message", ""))
            if pod is not None and pod["spec"].get("nodeName"):
                return pod
            return None

        pod = wait_for(bound)
        # the moment the team's pod is seen bound, the node is proven and untainted
        assert proven(kube, n)
        assert pod["spec"]["nodeName"] == n
        assert proof(kube, n)["verdict"] == "pass"
        assert seen_tainted_ready, "the node was never seen Ready and still gated"
        # (the pod's condition keeps the scheduler's last attempt's word, which may still be
        # that of the node before it registered or turned Ready: the scheduler retries an
        # unschedulable pod on its own backoff, so the word is not asserted here)
        messages = [m for m in seen_tainted_ready if m]
        if messages:
            print(f"\nthe scheduler's word while the node is gated: {messages[-1]}")
        wait_for(lambda: (team_pod(kube, "research", "train") or {}).get("status", {}).get(
            "phase") == "Succeeded")
    reasons = [e["reason"] for e in kube.events("Node", n)
               if e["reason"].startswith("GateProof")]
    assert reasons == ["GateProofPassed"]


def test_failing_nodes_stay_off_work_and_only_the_cap_is_quarantined(
        kube: RealCluster, tmp_path: Path) -> None:
    inventory = gated_inventory({POOL: InventoryGate(quarantine_cap="1",
                                                     reprove_interval_s=None)})
    p = pool(inventory, POOL)
    names = [f"gke-h100-train-{i}" for i in range(3)]
    for n in names:
        kube.set_node_output(n, h100_report(n, 100.0))  # far below the H100 floor
    tolerations = [dict(t) for t in p.tolerations if t.get("key") != GATE_TAINT_KEY]
    with controller(kube, tmp_path, inventory, "ml-gke", context=CONTEXT):
        kube.create("jobs", "research", team_job("train", tolerations, dict(p.node_selector)))
        for n in names:
            kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: all(state(kube, n) == "failed" for n in names))
        quarantined = wait_for(lambda: [n for n in names if (node(kube, n)["metadata"].get(
            "labels") or {}).get(SMOKE_KEY) == SMOKE_FAILED])
        time.sleep(2.0)  # nothing more arrives: every proof has ended (all three failed)
        quarantined = [n for n in names if (node(kube, n)["metadata"].get("labels") or {}).get(
            SMOKE_KEY) == SMOKE_FAILED]
        assert len(quarantined) == 1, quarantined
        assert all(held(kube, n) for n in names)  # each failed node: off work
        pod = team_pod(kube, "research", "train")
        assert pod is not None and not pod["spec"].get("nodeName")
        assert scheduled(pod).get("reason") == "Unschedulable"
    for n in names:
        reasons = [e["reason"] for e in kube.events("Node", n)
                   if e["reason"].startswith("GateProof")]
        assert reasons == ["GateProofFailed"], (n, reasons)


def _boot(kube: RealCluster, name: str) -> str:
    return str(node(kube, name)["status"].get("nodeInfo", {}).get("bootID", ""))


def test_a_node_registered_again_under_its_name_is_proven_again(
        kube: RealCluster, tmp_path: Path) -> None:
    inventory = gated_inventory()
    n = "gke-h100-train-0"
    kube.set_node_output(n, h100_report(n, 800.0))
    with controller(kube, tmp_path, inventory, "ml-gke", context=CONTEXT):
        first = kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: proven(kube, n))
        before = proof(kube, n)
        assert before["uid"] == first["metadata"]["uid"] and before["boot"] == _boot(kube, n)
        kube.remove_node(n)  # the machine went away: the cloud deleted its Node ...
        wait_for(lambda: kube.get("nodes", "", n) is None)
        second = kube.add_node_object(gke_gated_node(POOL, n))  # ... and one came back
        assert second["metadata"]["uid"] != first["metadata"]["uid"]
        wait_for(lambda: proven(kube, n) and proof(kube, n).get("run") != before["run"])
        after = proof(kube, n)
        assert after["uid"] == second["metadata"]["uid"] and after["boot"] == _boot(kube, n)


def test_a_node_registered_again_during_its_proof_never_inherits_the_pass(
        kube: RealCluster, tmp_path: Path) -> None:
    """The old machine's proof is running (slow) when the node is deleted and a new one
    registers under the name: the old verdict is not written on the new node; the new one
    is proven by a run of its own."""
    inventory = gated_inventory()
    n = "gke-h100-train-0"
    report = h100_report(n, 800.0)
    slow = [sys.executable, "-c", f"import time; time.sleep(4); print({report!r})"]
    kube.set_node_command(n, slow)
    with controller(kube, tmp_path, inventory, "ml-gke", context=CONTEXT) as running:
        first = kube.add_node_object(gke_gated_node(POOL, n))
        old_run = wait_for(lambda: state(kube, n) == "proving" and (node(kube, n)[
            "metadata"].get("annotations") or {}).get("accelfleet.io/gate-run"))
        kube.remove_node(n)
        wait_for(lambda: kube.get("nodes", "", n) is None)
        kube.set_node_command(n, slow)
        second = kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: proven(kube, n))
        after = proof(kube, n)
        assert after["run"] != old_run
        assert after["uid"] == second["metadata"]["uid"] != first["metadata"]["uid"]
        # the controller records its result just after the node's write
        wait_for(lambda: getattr(running.gate.summary.results.get(n), "verdict", "") == "pass")


def test_a_proven_node_that_reboots_is_gated_and_proven_afresh(
        kube: RealCluster, tmp_path: Path) -> None:
    inventory = gated_inventory()
    n = "gke-h100-train-0"
    kube.set_node_output(n, h100_report(n, 800.0))
    with controller(kube, tmp_path, inventory, "ml-gke", context=CONTEXT):
        kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: proven(kube, n))
        before = proof(kube, n)
        report = h100_report(n, 800.0)  # the re-proof is slow enough to be seen running
        kube.set_node_command(n, [sys.executable, "-c",
                                  f"import time; time.sleep(3); print({report!r})"])
        # the machine rebooted (auto-repair): its kubelet reports a new boot ID
        kube.patch("nodes", "", n, {"status": {"nodeInfo": {"bootID": "rebooted-0001"}}},
                   subresource="status")
        wait_for(lambda: tainted(kube, n) and state(kube, n) == "proving")  # gated again
        wait_for(lambda: proof(kube, n).get("boot") == "rebooted-0001" and proven(kube, n))
        after = proof(kube, n)
        assert after["run"] != before["run"] and after["uid"] == before["uid"]
    reasons = [e["reason"] for e in kube.events("Node", n) if e["reason"].startswith("Gate")]
    assert reasons == ["GateProofPassed", "GateProofPassed"]
