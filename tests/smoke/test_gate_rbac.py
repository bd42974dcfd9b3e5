"""Issue 26: the gate controller's least-privilege RBAC (components/k8s/_gate.py) is what the
controller really needs, no less: the fake API server authorizes every request as the real
RBAC authorizer would for the controller's ServiceAccount bound to the component's own
ClusterRole and Role, and answers anything else with the real 403. A scale-up with a passing
and a failing node (proof, untaint, condition, Events, quarantine), then a re-proof of the
idle one, must run with no request denied."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from components.k8s._gate import NAME, GateControllerArgs, gate_objects, queue_namespaces
from fleet.inventory import InventoryGate
from fleet.labels import GATE_PROOF_ANNOTATION, SLICE_STARTED_ANNOTATION, SMOKE_KEY
from tests.smoke.gate_cluster import (
    NAMESPACE,
    controller,
    deploy_kueue,
    gated_inventory,
    gke_gated_node,
    h100_report,
    proof_jobs,
    routed,
)
from tests.smoke.test_gate import gate_state, node, wait_for


def _rules(kind: str) -> list[dict[str, Any]]:
    objs = gate_objects(GateControllerArgs(cluster="ml-gke", namespace=NAMESPACE,
                                           inventory={}))
    return next(o for o in objs if o["kind"] == kind)["rules"]


def test_the_controller_needs_no_permission_its_rbac_lacks(fake_cluster: Any,
                                                           tmp_path: Path) -> None:
    fake_cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})  # as deployed
    fake_cluster.enforce_rbac(f"system:serviceaccount:{NAMESPACE}:{NAME}",
                              _rules("ClusterRole"), NAMESPACE, _rules("Role"))
    inventory = gated_inventory({"h100-train": InventoryGate(reprove_interval_s=1)})
    good, bad = "gke-h100-train-0", "gke-h100-train-1"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    fake_cluster.set_node_output(bad, h100_report(bad, 300.0))  # below the H100 floor
    with controller(fake_cluster, tmp_path, inventory, "ml-gke"):
        fake_cluster.join([gke_gated_node("h100-train", n) for n in (good, bad)])
        wait_for(lambda: fake_cluster.denials or (gate_state(fake_cluster, good) == "proven"
                 and gate_state(fake_cluster, bad) == "failed"))
        assert fake_cluster.denials == [], "\n".join(sorted(set(fake_cluster.denials)))
        wait_for(lambda: (node(fake_cluster, bad)["metadata"].get("labels") or {}).get(
            SMOKE_KEY) == "failed")
        first = json.loads(node(fake_cluster, good)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"]
        wait_for(lambda: json.loads(node(fake_cluster, good)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"] != first, 60)  # re-proven: it is idle
    assert fake_cluster.denials == []


def test_a_permission_missing_from_the_rbac_is_refused_as_the_api_server_refuses(
        fake_cluster: Any, tmp_path: Path) -> None:
    """The authorizer itself: without the Role (its Lease, its proof Jobs), the controller is
    refused in its namespace as the API server refuses, and proves nothing."""
    fake_cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})
    fake_cluster.enforce_rbac(f"system:serviceaccount:{NAMESPACE}:{NAME}",
                              _rules("ClusterRole"), NAMESPACE, [])
    inventory = gated_inventory()
    fake_cluster.set_node_output("gke-h100-train-0", h100_report("gke-h100-train-0", 800.0))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke"):
        fake_cluster.join([gke_gated_node("h100-train", "gke-h100-train-0")])
        wait_for(lambda: fake_cluster.denials)
    assert gate_state(fake_cluster, "gke-h100-train-0") != "proven"
    assert any(f'in the namespace "{NAMESPACE}"' in d for d in fake_cluster.denials)


def test_a_reproof_through_a_teams_queue_needs_nothing_more_than_its_rbac(
        fake_cluster: Any, tmp_path: Path) -> None:
    """A pool Kueue routes: the re-proof is a Job in team research's namespace (its
    LocalQueue's); the controller is bound there only to the Role the component makes for it
    (and may read that Namespace), and nothing is refused."""
    inventory = routed(gated_inventory({"h100-train": InventoryGate()}), "h100-train",
                       reprove_interval_s=1)
    mine = {**inventory.to_dict(), "pools": [p for p in inventory.to_dict()["pools"]
                                            if p["cluster"] == "ml-gke"]}
    objs = gate_objects(GateControllerArgs(cluster="ml-gke", namespace=NAMESPACE,
                                           inventory=mine))
    assert queue_namespaces(mine, NAMESPACE) == ["research", "vision"]  # the owner teams'
    roles = {o["metadata"]["namespace"]: o["rules"] for o in objs if o["kind"] == "Role"}
    cluster_role = next(o for o in objs if o["kind"] == "ClusterRole")["rules"]
    fake_cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})
    deploy_kueue(fake_cluster, inventory, "ml-gke")
    fake_cluster.enforce_rbac(f"system:serviceaccount:{NAMESPACE}:{NAME}", cluster_role,
                              NAMESPACE, roles[NAMESPACE],
                              {q: roles[q] for q in ("research", "vision")})
    good = "gke-h100-train-0"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke"):
        fake_cluster.join([gke_gated_node("h100-train", good)])
        wait_for(lambda: fake_cluster.denials or gate_state(fake_cluster, good) == "proven")
        first = json.loads(node(fake_cluster, good)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"]
        wait_for(lambda: fake_cluster.denials or json.loads(node(
            fake_cluster, good)["metadata"]["annotations"][GATE_PROOF_ANNOTATION])["run"]
            != first, 60)
    assert fake_cluster.denials == [], "\n".join(sorted(set(fake_cluster.denials)))
    assert any(j["metadata"]["namespace"] == "research" for j in proof_jobs(fake_cluster))


def test_a_tpu_slice_reproof_through_a_teams_queue_needs_nothing_more_than_its_rbac(
        fake_cluster: Any, tmp_path: Path) -> None:
    """Issue 35: a multi-host TPU slice's re-proof through its owner team's queue tells the
    slice's pods when the last host started (a pod patch, in the team's namespace): the Role
    the component makes there must allow it (it did not)."""
    from tests.smoke.gate_cluster import pool, tpu_report

    inventory = routed(gated_inventory({"v5p-slice": InventoryGate()}), "v5p-slice",
                       reprove_interval_s=1)
    mine = {**inventory.to_dict(), "pools": [p for p in inventory.to_dict()["pools"]
                                            if p["cluster"] == "ml-gke"]}
    objs = gate_objects(GateControllerArgs(cluster="ml-gke", namespace=NAMESPACE,
                                           inventory=mine))
    queued = queue_namespaces(mine, NAMESPACE)
    roles = {o["metadata"]["namespace"]: o["rules"] for o in objs if o["kind"] == "Role"}
    cluster_role = next(o for o in objs if o["kind"] == "ClusterRole")["rules"]
    fake_cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})
    deploy_kueue(fake_cluster, inventory, "ml-gke")
    fake_cluster.enforce_rbac(f"system:serviceaccount:{NAMESPACE}:{NAME}", cluster_role,
                              NAMESPACE, roles[NAMESPACE], {q: roles[q] for q in queued})
    v5p = pool(inventory, "v5p-slice")
    hosts = [f"gke-v5p-slice-{i:02d}" for i in range(v5p.hosts_per_slice)]
    for h in hosts:  # each host's agent runs a while: its pod is told when all started
        report = tpu_report(h, v5p)
        fake_cluster.set_node_command(h, [sys.executable, "-c",
                                          f"import time; time.sleep(1.5); print({report!r})"])
    with controller(fake_cluster, tmp_path, inventory, "ml-gke"):
        for h in hosts:
            fake_cluster.add_node_object(gke_gated_node("v5p-slice", h,
                                                        nodepool="v5p-slice-np"))
        wait_for(lambda: fake_cluster.denials or all(
            gate_state(fake_cluster, h) == "proven" for h in hosts))
        first = json.loads(node(fake_cluster, hosts[0])["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"]
        wait_for(lambda: fake_cluster.denials or (json.loads(node(
            fake_cluster, hosts[0])["metadata"]["annotations"][GATE_PROOF_ANNOTATION])["run"]
            != first and gate_state(fake_cluster, hosts[0]) == "proven"), 120)
    assert fake_cluster.denials == [], "\n".join(sorted(set(fake_cluster.denials)))
    patched = {(ns, name) for _, _, (plural, ns, name), obj in fake_cluster.changes()
               if plural == "pods" and ns in queued and (obj["metadata"].get(
                   "annotations") or {}).get(SLICE_STARTED_ANNOTATION)}
    assert patched, "the re-proof's pods in the team's namespace were never told"
