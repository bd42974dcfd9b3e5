"""The gate's hostile-answer fixes (issue 35) where the behaviour is the API's, on the real
control plane: the real API server refuses the malformed nodes the fake serves (so those
reach the gate only from a broken server, a proxy or a conversion gone wrong: the fake's
`tests/smoke/test_gate_hostile.py` plays them), and stores any text in a proof annotation,
which the gate then proves again rather than crash on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory import InventoryGate
from fleet.labels import GATE_LABEL, GATE_PROOF_ANNOTATION, GATE_TAINT_KEY
from tests.controlplane._rest import RestError
from tests.controlplane.cluster import RealCluster
from tests.smoke.gate_cluster import controller, gated_inventory, gke_gated_node, h100_report
from tests.smoke.test_gate import gate_state, wait_for

pytestmark = pytest.mark.controlplane


@pytest.mark.parametrize("path,value", [
    ("spec.taints", "nvidia.com/gpu=present:NoSchedule"),
    ("metadata.annotations", ["a=b"]),
    ("metadata.labels", ["accelfleet.io/pool"]),
    ("status.conditions", "Ready"),
    ("spec.unschedulable", "no"),
])
def test_the_api_server_refuses_the_malformed_nodes_the_fake_serves(
        kube: RealCluster, path: str, value: Any) -> None:
    node = gke_gated_node("h100-train", "gke-h100-train-9")
    *parents, last = path.split(".")
    here: Any = node
    for p in parents:
        here = here.setdefault(p, {})
    here[last] = value
    with pytest.raises(RestError) as refused:
        kube.create("nodes", "", node)
    assert refused.value.status in (400, 422)
    assert kube.get("nodes", "", "gke-h100-train-9") is None


def test_a_proof_without_its_offset_is_stored_by_the_api_and_proven_again(
        kube: RealCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))
    n = "gke-h100-train-0"
    kube.set_node_output(n, h100_report(n, 800.0))
    obj = gke_gated_node("h100-train", n)
    obj["spec"]["taints"] = [t for t in obj["spec"]["taints"] if t["key"] != GATE_TAINT_KEY]
    obj["metadata"].setdefault("labels", {})[GATE_LABEL] = "proven"
    kube.add_node_object(obj)
    stamp = json.dumps({"at": "2026-11-28T09:00:00", "run": "r2611280900-0a0a",
                        "verdict": "pass", "tiers": "0-2"})
    kube.patch("nodes", "", n, {"metadata": {"annotations": {GATE_PROOF_ANNOTATION: stamp}}})
    stored = kube.get("nodes", "", n)
    assert stored is not None and stored["metadata"]["annotations"][
        GATE_PROOF_ANNOTATION] == stamp  # anyone who may patch nodes can write it
    inventory = gated_inventory({"h100-train": InventoryGate(reprove_interval_s=3600)})
    with controller(kube, tmp_path, inventory, "ml-gke", timeout_s=120) as running:
        wait_for(lambda: json.loads((kube.get("nodes", "", n) or {})["metadata"][
            "annotations"][GATE_PROOF_ANNOTATION]).get("run") != "r2611280900-0a0a", 180)
        wait_for(lambda: gate_state(kube, n) == "proven", 60)
        assert running.thread.is_alive()
    proof = json.loads((kube.get("nodes", "", n) or {})["metadata"]["annotations"][
        GATE_PROOF_ANNOTATION])
    assert proof["at"].endswith("Z") and proof["verdict"] == "pass"
