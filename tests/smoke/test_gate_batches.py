"""Proofs of several nodes together on the fake API server (split from test_gate.py): a pool's
nodes Ready together go into one proof, each judged on its own; a fabric pool's new nodes get
the cross-node check and a lone one is paired with a proven node; a pod that never starts
(its image never pulls) is an infrastructure error, retried, never a failure."""

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
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
    proof_jobs,
)
from tests.smoke.test_gate import events, gate_state, node
from tests.waiting import wait_for


@pytest.fixture(autouse=True)
def _no_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))


@pytest.fixture
def cpu_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake cluster's nodes are this machine's CPU: judge them as CPUs (no catalog
    expectation), as `accelfleet smoke local` does here."""
    import smoke.expectations
    from smoke.probes.expect import Expectation

    monkeypatch.setattr(smoke.expectations, "for_pool", lambda pool, backend: Expectation())


def test_a_fabric_pool_proves_new_nodes_together_then_pairs_one_with_a_proven_node(
        fake_cluster: Any, tmp_path: Path, cpu_nodes: None) -> None:
    """The real agent (on this CPU) at tier 3: the cross-node collective joins the unit's
    nodes; a lone new node is paired with a proven one, which stays as it was."""
    pytest.importorskip("torch")
    from fleet.inventory import InventoryGate

    gate = InventoryGate(max_tier=3, fabric=True)
    inventory = gated_inventory({"l4-spot": gate})
    a, b, c = (f"gke-l4-spot-{i}" for i in range(3))
    # two new nodes Ready when the controller lists: one unit (two nodes whose watch events
    # arrive while it runs may be planned in two rounds: the first change starts a round at
    # once, the second joins the next; seen once in a full run, a unit of one each)
    for n in (a, b):
        fake_cluster.add_node_object(gke_gated_node("l4-spot", n))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", timeout_s=180) as running:
        wait_for(lambda: all(gate_state(fake_cluster, n) == "proven" for n in (a, b)), 240)
        together = {json.loads(node(fake_cluster, n)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"] for n in (a, b)}
        assert len(together) == 1
        peer_before = node(fake_cluster, a)["metadata"]["annotations"][GATE_PROOF_ANNOTATION]
        fake_cluster.add_node_object(gke_gated_node("l4-spot", c))
        wait_for(lambda: gate_state(fake_cluster, c) == "proven", 240)
    proof = json.loads(node(fake_cluster, c)["metadata"]["annotations"][GATE_PROOF_ANNOTATION])
    assert proof["tiers"] == "0-3+fabric" and proof["peers"] in ([a], [b])
    peer = proof["peers"][0]
    if peer == a:
        assert node(fake_cluster, a)["metadata"]["annotations"][GATE_PROOF_ANNOTATION] == \
            peer_before
    report = running.gate.summary.results[c]
    assert report.verdict == "pass"
    assert running.summary is not None and running.summary.proofs == 2


# A container whose image cannot be pulled, as the kubelet reports it: the pod stays Pending,
# its container waiting with reason ErrImagePull (then ImagePullBackOff); the reasons are the
# kubelet's (https://kubernetes.io/docs/concepts/containers/images/#imagepullbackoff, read
# 2026-11-27); the message is containerd's shape for a missing tag.
IMAGE_PULL = {"phase": "Pending", "containerStatuses": [{
    "name": "agent", "ready": False, "restartCount": 0, "started": False, "image": "x",
    "imageID": "", "state": {"waiting": {"reason": "ErrImagePull", "message": (
        'rpc error: code = NotFound desc = failed to pull and unpack image "x": not found')}}}]}


def test_an_image_that_never_pulls_is_retried_as_infrastructure_not_failed(
        fake_cluster: Any, tmp_path: Path) -> None:
    n = "gke-h100-train-0"
    report = tmp_path / "report.json"
    report.write_text(h100_report(n, 800.0), encoding="utf-8")
    marker = tmp_path / "starts"
    fake_cluster.base_env.update(GATE_MARKER=str(marker), GATE_REPORT=str(report))
    fake_cluster.set_node_command(n, ["python", "-c", (
        "import os, time\n"
        "marker = os.environ['GATE_MARKER']\n"
        "first = not os.path.exists(marker)\n"
        "open(marker, 'a').write('x')\n"
        "time.sleep(120 if first else 0)\n"
        "print(open(os.environ['GATE_REPORT']).read())")])

    def kubelet_cannot_pull() -> None:  # the first proof pod's image never pulls
        def first() -> list[dict[str, Any]]:
            return [p for p in fake_cluster.objects(f"{RUN_LABEL}") if p.get("kind") == "Pod"
                    and p["status"].get("phase") == "Running"]
        pods = wait_for(first, 60)
        fake_cluster.patch("pods", pods[0]["metadata"]["namespace"],
                           pods[0]["metadata"]["name"], {"status": IMAGE_PULL})

    import threading

    threading.Thread(target=kubelet_cannot_pull, daemon=True).start()
    with controller(fake_cluster, tmp_path, gated_inventory(), "ml-gke", timeout_s=4) as run:
        fake_cluster.add_node_object(gke_gated_node("h100-train", n))
        wait_for(lambda: gate_state(fake_cluster, n) == "proven", 90)
    reasons = [e["reason"] for e in events(fake_cluster, n)]
    assert reasons == ["GateProofRetry", "GateProofPassed"]  # retried, never failed
    retry = events(fake_cluster, n)[0]["message"]
    assert "could not judge the node" in retry and "never started" in retry
    assert run.gate.verdict_counts == {("h100-train", "infra"): 1, ("h100-train", "pass"): 1}
    assert not any(c["type"] == "AccelfleetProof" and c["status"] == "False"
                   for c in node(fake_cluster, n)["status"]["conditions"])


def test_a_pools_ready_nodes_are_proven_together_in_one_proof(fake_cluster: Any,
                                                              tmp_path: Path) -> None:
    """Per-node tiers on a pool without the fabric check: the new nodes that are Ready
    together go into one proof (one Job, a pod pinned to each), each judged on its own."""
    names = [f"gke-h100-train-{i}" for i in range(3)]
    for n in names:
        fake_cluster.set_node_output(n, h100_report(n, 800.0))
    bad = "gke-h100-train-3"
    fake_cluster.set_node_output(bad, h100_report(bad, 300.0))  # below the H100 floor
    with controller(fake_cluster, tmp_path, gated_inventory(), "ml-gke") as running:
        with fake_cluster.lock:  # they turn Ready together
            for n in [*names, bad]:
                fake_cluster.add_node_object(gke_gated_node("h100-train", n))
        wait_for(lambda: all(gate_state(fake_cluster, n) == "proven" for n in names)
                 and gate_state(fake_cluster, bad) == "failed")
    runs = {json.loads(node(fake_cluster, n)["metadata"]["annotations"][
        GATE_PROOF_ANNOTATION])["run"] for n in names}
    assert len(runs) == 1 and running.gate.summary.proofs == 1
    assert running.gate.summary.results[bad].run_id in runs  # the same proof failed it alone
    [job] = proof_jobs(fake_cluster)
    assert job["spec"]["parallelism"] == 4
    terms = job["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == sorted([*names, bad])
    proof = json.loads(node(fake_cluster, names[0])["metadata"]["annotations"][
        GATE_PROOF_ANNOTATION])
    assert proof["tiers"] == "0-2"  # no fabric check claimed for a batch
    assert fake_cluster.objects(RUN_LABEL) == []


def test_a_node_of_a_batch_whose_pod_never_starts_is_retried_not_failed(
        fake_cluster: Any, tmp_path: Path) -> None:
    """One node's proof pod of a batch never starts (its image never pulls): that node is an
    infrastructure error, retried; the rest of the batch passes in that proof."""
    good, slow = "gke-h100-train-0", "gke-h100-train-1"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    report = tmp_path / "report.json"
    report.write_text(h100_report(slow, 800.0), encoding="utf-8")
    marker = tmp_path / "starts"
    fake_cluster.base_env.update(GATE_MARKER=str(marker), GATE_REPORT=str(report))
    fake_cluster.set_node_command(slow, ["python", "-c", (
        "import os, time\n"
        "marker = os.environ['GATE_MARKER']\n"
        "first = not os.path.exists(marker)\n"
        "open(marker, 'a').write('x')\n"
        "time.sleep(120 if first else 0)\n"
        "print(open(os.environ['GATE_REPORT']).read())")])

    def kubelet_cannot_pull() -> None:  # the slow node's first proof pod never pulls
        def first() -> list[dict[str, Any]]:
            return [p for p in fake_cluster.objects(RUN_LABEL) if p.get("kind") == "Pod"
                    and p["spec"].get("nodeName") == slow
                    and p["status"].get("phase") == "Running"]
        pods = wait_for(first, 60)
        fake_cluster.patch("pods", pods[0]["metadata"]["namespace"],
                           pods[0]["metadata"]["name"], {"status": IMAGE_PULL})

    import threading

    threading.Thread(target=kubelet_cannot_pull, daemon=True).start()
    with controller(fake_cluster, tmp_path, gated_inventory(), "ml-gke", timeout_s=4) as run:
        with fake_cluster.lock:
            for n in (good, slow):
                fake_cluster.add_node_object(gke_gated_node("h100-train", n))
        wait_for(lambda: gate_state(fake_cluster, slow) == "proven"
                 and gate_state(fake_cluster, good) == "proven", 90)
    assert [e["reason"] for e in events(fake_cluster, slow)] == ["GateProofRetry",
                                                                  "GateProofPassed"]
    assert [e["reason"] for e in events(fake_cluster, good)] == ["GateProofPassed"]
    assert run.gate.verdict_counts == {("h100-train", "infra"): 1, ("h100-train", "pass"): 2}


def test_a_fabric_pools_new_nodes_get_the_cross_node_check_though_max_tier_stops_at_t2(
        fake_cluster: Any, tmp_path: Path) -> None:
    """A stack's gate runs T0..max_tier (at most T2) per node; on a pool with the fabric
    check, a proof of several hosts also runs the cross-node tier (T3), which is the fabric
    check: before, the proof ran at T2, never checked the fabric, and recorded `+fabric`."""
    from fleet.inventory import InventoryGate

    names = ["gke-h100-train-0", "gke-h100-train-1"]
    for n in names:
        fake_cluster.set_node_output(n, h100_report(n, 800.0))
    inventory = gated_inventory({"h100-train": InventoryGate(fabric=True)})  # max_tier 2
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        with fake_cluster.lock:
            for n in names:
                fake_cluster.add_node_object(gke_gated_node("h100-train", n))
        wait_for(lambda: proof_jobs(fake_cluster) and all(
            running.gate.summary.results.get(n) is not None for n in names))
    [job] = proof_jobs(fake_cluster)
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--tier") + 1] == "3" and "--cross-node" in args
