"""Issue 35, "Metrics and health" of the gate controller (smoke/gate/_metrics.py, _hours.py,
_serve.py, session.py):

- a re-proof's time goes to its own histogram (`accelfleet_gate_reproof_seconds`), never to
  Ready-to-proven (a proven node re-proven a day later counted a day there);
- node-hours come from the nodes' own timestamps: the time no controller ran counts (before,
  only the loops of a running leader did), and a node that waited before the first controller
  started counts from its creation;
- in the cluster the smoke history is off unless `--history FILE` says where, said once at the
  start (before: every proof tried the read-only root filesystem and logged an error);
- /readyz is not ready while the node list or watch fails (the real authorizer's refusal is in
  tests/controlplane/test_gate_readyz_real.py).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.inventory import InventoryGate
from fleet.labels import (
    GATE_CONDITION,
    GATE_NODE_HOURS_ANNOTATION,
    GATE_NODE_HOURS_AT_ANNOTATION,
    GATE_PROOF_ANNOTATION,
)
from smoke.gate import _hours as H
from smoke.gate import nodes as N
from smoke.gate._metrics import render
from smoke.gate._serve import not_ready
from smoke.gate.recording import IN_CLUSTER_HISTORY_OFF, history_choice
from tests.smoke.gate_cluster import (
    NAMESPACE,
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
)
from tests.smoke.test_gate import gate_state, node, wait_for

POOL = "h100-train"


def _unproven(gate: Any) -> float:
    return sum(h for (_, _, k), h in gate.node_hours.items() if k == "unproven")


def _stamp(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- re-proof times ---------------------------------------------------------------------------
def test_a_reproof_lands_in_its_own_histogram_not_ready_to_proven(fake_cluster: Any,
                                                                   tmp_path: Path) -> None:
    """A proven node made due (its proof two hours old, the pool re-proven hourly) is proven
    again: Ready-to-proven keeps its one first proof; the re-proof is counted apart."""
    inventory = gated_inventory({POOL: InventoryGate(reprove_interval_s=3600)})
    name = "gke-h100-train-0"
    fake_cluster.set_node_output(name, h100_report(name, 800.0))

    def proof() -> dict[str, Any]:
        return dict(json.loads(node(fake_cluster, name)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION]))

    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        fake_cluster.join([gke_gated_node(POOL, name)], ready_after_s=0.2)  # Ready: its time
        wait_for(lambda: gate_state(fake_cluster, name) == "proven")
        first = proof()
        old = {**first, "at": _stamp(datetime.now(UTC) - timedelta(hours=2))}
        fake_cluster.patch("nodes", "", name, {"metadata": {"annotations": {
            GATE_PROOF_ANNOTATION: json.dumps(old, sort_keys=True)}}})
        wait_for(lambda: gate_state(fake_cluster, name) == "proven"
                 and proof()["run"] != first["run"], 90)
        text = render([running.gate])
    assert [len(v) for v in running.gate.ready_to_proven.values()] == [1], (
        running.gate.ready_to_proven, running.gate.reproof_seconds, running.gate.summary)
    assert [len(v) for v in running.gate.reproof_seconds.values()] == [1]
    labels = f'cluster="ml-gke",pool="{POOL}"'
    assert f"accelfleet_gate_ready_to_proven_seconds_count{{{labels}}} 1" in text
    assert f"accelfleet_gate_reproof_seconds_count{{{labels}}} 1" in text
    assert "# TYPE accelfleet_gate_reproof_seconds histogram" in text


# -- node-hours from the nodes' timestamps -----------------------------------------------------
DOWN_S = 6.0  # how long no controller runs in the scenario below


def test_the_time_no_controller_ran_counts(fake_cluster: Any, tmp_path: Path) -> None:
    """A node that never turns Ready stays unproven. The leader stops (its totals and their
    watermark on the Lease); no controller runs for DOWN_S; the next leader's totals grow by at
    least the time between (before: by its own loops alone, the gap lost)."""
    inventory = gated_inventory()
    name = "gke-h100-train-0"
    fake_cluster.add_node_object(gke_gated_node(POOL, name), ready=False)
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", identity="gate-a") as first:
        wait_for(lambda: _unproven(first.gate) > 0)
    stopped = time.monotonic()
    lease = fake_cluster.get("leases", NAMESPACE, "accelfleet-gate")
    notes = lease["metadata"]["annotations"]
    on_lease = sum(r["hours"] for r in json.loads(notes[GATE_NODE_HOURS_ANNOTATION])
                   if r["kind"] == "unproven")
    assert GATE_NODE_HOURS_AT_ANNOTATION in notes
    time.sleep(DOWN_S)  # the controller is down
    started = time.monotonic()
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", identity="gate-b") as second:
        wait_for(lambda: second.gate.adopted and _unproven(second.gate) > on_lease)
        grown_s = (_unproven(second.gate) - on_lease) * 3600
    assert grown_s >= started - stopped >= DOWN_S


def test_a_node_waiting_before_the_first_controller_counts_from_its_creation(
        fake_cluster: Any, tmp_path: Path) -> None:
    inventory = gated_inventory()
    name = "gke-h100-train-0"
    fake_cluster.add_node_object(gke_gated_node(POOL, name), ready=False)
    created = N.GateNode.of(node(fake_cluster, name)).created
    assert created is not None
    time.sleep(3.0)  # no controller yet
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", elect=False) as running:
        wait_for(lambda: running.gate.hours_at is not None)
        counted_s = _unproven(running.gate) * 3600
        through = running.gate.hours_at
    assert counted_s == pytest.approx((through - created).total_seconds(), abs=1e-3)
    assert counted_s >= 3.0


def _node(*, created: datetime, state: str = "", proof_at: datetime | None = None,
          ready_at: datetime | None = None, failed_at: datetime | None = None,
          tainted: bool = True, quarantined: bool = False) -> N.GateNode:
    labels = {"accelfleet.io/pool": POOL, "accelfleet.io/team": "research"}
    if state:
        labels["accelfleet.io/gate"] = state
    if quarantined:
        labels["accelfleet.io/smoke"] = "failed"
    annotations = {}
    if proof_at is not None:
        annotations[GATE_PROOF_ANNOTATION] = json.dumps({
            "at": _stamp(proof_at), "run": "r2611280000-abcd", "verdict": "pass",
            "uid": "old-uid", "boot": "old-boot"})
    conditions = [{"type": "Ready", "status": "True",
                   "lastTransitionTime": _stamp(ready_at or created)}]
    if failed_at is not None:
        conditions.append({"type": GATE_CONDITION, "status": "False", "reason": "ProofFailed",
                           "lastTransitionTime": _stamp(failed_at)})
    taints = [{"key": "startup-taint.cluster-autoscaler.kubernetes.io/accelfleet-gate",
               "value": "unproven", "effect": "NoSchedule"}] if tainted else []
    return N.GateNode.of({
        "metadata": {"name": "n", "uid": "uid", "labels": labels, "annotations": annotations,
                     "creationTimestamp": _stamp(created), "resourceVersion": "1"},
        "spec": {"taints": taints},
        "status": {"conditions": conditions, "nodeInfo": {"bootID": "boot"}}})


NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("n, kind, hours", [
    # new, unproven since its creation 3 h ago
    (_node(created=NOW - timedelta(hours=3)), "unproven", 3.0),
    # proven 10 h ago, rebooted 1 h ago (Ready since; the proof names another boot)
    (_node(created=NOW - timedelta(days=2), proof_at=NOW - timedelta(hours=10),
           ready_at=NOW - timedelta(hours=1)), "unproven", 1.0),
    # failed 2 h ago (the gate condition turned False), quarantined
    (_node(created=NOW - timedelta(days=1), state="failed", failed_at=NOW - timedelta(hours=2),
           quarantined=True), "quarantined", 2.0),
    # failed, not quarantined (the cap): quarantined hours all the same
    (_node(created=NOW - timedelta(days=1), state="failed",
           failed_at=NOW - timedelta(minutes=30)), "quarantined", 0.5),
])
def test_each_node_counts_from_when_it_entered_its_state(n: N.GateNode, kind: str,
                                                         hours: float) -> None:
    totals: H.Totals = {}
    H.count_nodes(totals, [n], {POOL: "research"}, None, NOW)
    assert totals == {(POOL, "research", kind): pytest.approx(hours)}
    later: H.Totals = {}  # with a watermark: from it, not from the node's start
    H.count_nodes(later, [n], {POOL: "research"}, NOW - timedelta(minutes=6), NOW)
    assert later == {(POOL, "research", kind): pytest.approx(0.1)}


def test_proven_and_foreign_nodes_count_nothing_and_a_skewed_mark_counts_nothing() -> None:
    proven = _node(created=NOW - timedelta(days=1), state="proven", tainted=False)
    other = _node(created=NOW - timedelta(days=1))
    totals: H.Totals = {}
    H.count_nodes(totals, [proven], {POOL: "research"}, None, NOW)
    H.count_nodes(totals, [other], {"another-pool": "x"}, None, NOW)
    assert totals == {}
    gate = SimpleNamespace(hours_at=NOW + timedelta(hours=1), elector=None, node_hours={},
                           pools={POOL: SimpleNamespace(team="research")},
                           _nodes=lambda: [other])
    H.tick(gate, NOW)  # type: ignore[arg-type]
    assert gate.node_hours == {} and gate.hours_at == NOW


def test_the_lease_carries_the_watermark_and_totals_written_before_it_count_no_gap() -> None:
    mark = NOW - timedelta(minutes=30)
    notes = H.record({(POOL, "research", "unproven"): 2.0}, None, mark)
    elector = SimpleNamespace(stored=notes)
    assert H.stored(elector) == {(POOL, "research", "unproven"): 2.0}
    assert H.stored_at(elector) == mark
    n = _node(created=NOW - timedelta(hours=5))
    gate = SimpleNamespace(hours_at=None, elector=elector, node_hours=H.stored(elector),
                           pools={POOL: SimpleNamespace(team="research")}, _nodes=lambda: [n])
    H.tick(gate, NOW)  # type: ignore[arg-type]
    assert gate.node_hours[(POOL, "research", "unproven")] == pytest.approx(2.5)
    # totals of a controller before the watermark: no gap known, nothing counted for it
    old = SimpleNamespace(stored={GATE_NODE_HOURS_ANNOTATION: notes[GATE_NODE_HOURS_ANNOTATION]})
    gate = SimpleNamespace(hours_at=None, elector=old, node_hours=H.stored(old),
                           pools={POOL: SimpleNamespace(team="research")}, _nodes=lambda: [n])
    H.tick(gate, NOW)  # type: ignore[arg-type]
    assert gate.node_hours[(POOL, "research", "unproven")] == pytest.approx(2.0)


# -- the history in the cluster ------------------------------------------------------------
def test_history_is_off_in_the_cluster_unless_a_file_is_named() -> None:
    assert history_choice(False, None, True) == (True, "")
    assert history_choice(False, None, False) == (False, "")
    assert history_choice(True, None, True) == (False, IN_CLUSTER_HISTORY_OFF)
    assert history_choice(True, Path("/data/history.sqlite"), True) == (True, "")
    assert history_choice(True, None, False) == (False, "")
    assert "--history FILE" in IN_CLUSTER_HISTORY_OFF


def test_in_the_cluster_no_proof_tries_the_history_and_it_is_said_once(
        fake_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller's root filesystem is read-only in its pod: here the default history
    path cannot be made (its parent is a file). Two proofs: no history error, nothing
    recorded; `gate run --in-cluster` says so once, at the start."""
    from kubernetes import client as k
    from kubernetes import config

    from smoke.gate.session import GateRequest, run_gate

    def incluster() -> None:
        conf = k.Configuration()
        conf.host = fake_cluster.url
        k.Configuration.set_default(conf)

    monkeypatch.setattr(config, "load_incluster_config", incluster)
    blocker = tmp_path / "read-only"
    blocker.write_text("a file, not a folder", encoding="utf-8")
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(blocker / "history.sqlite"))
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(gated_inventory().to_dict()), encoding="utf-8")
    names = ["gke-h100-train-0", "gke-h100-train-1"]
    for n in names:
        fake_cluster.set_node_output(n, h100_report(n, 800.0))
    stop = threading.Event()
    got: list[Any] = []
    request = GateRequest(in_cluster=True, inventory=inv, cluster="ml-gke",
                          namespace=NAMESPACE, lease_s=2.0, record_history=True)
    thread = threading.Thread(target=lambda: got.extend(run_gate(request, stop)), daemon=True)
    thread.start()
    try:
        for n in names:
            fake_cluster.join([gke_gated_node(POOL, n)])
            wait_for(lambda n=n: gate_state(fake_cluster, n) == "proven")
    finally:
        stop.set()
        thread.join(60)
        k.Configuration.set_default(None)
    [summary] = got
    assert summary.proofs == 2
    assert not [e for e in summary.errors if "history" in e], summary.errors
    assert blocker.is_file()  # nothing tried to make the history there


def test_gate_run_in_the_cluster_says_once_that_history_is_off(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[Any] = []
    monkeypatch.setattr("smoke.gate.session.run_gate",
                        lambda request, stop: seen.append(request) or [])
    args = ["gate", "run", "--in-cluster", "--inventory", str(tmp_path / "inventory.json"),
            "--cluster", "ml-gke", "--namespace", NAMESPACE]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output.count(IN_CLUSTER_HISTORY_OFF) == 1
    result = CliRunner().invoke(app, [*args, "--history", str(tmp_path / "h.sqlite")])
    assert IN_CLUSTER_HISTORY_OFF not in result.output
    result = CliRunner().invoke(app, [*args, "--no-history"])
    assert IN_CLUSTER_HISTORY_OFF not in result.output


def test_gate_run_takes_the_pull_secrets_and_refuses_a_bad_name(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[Any] = []
    monkeypatch.setattr("smoke.gate.session.run_gate",
                        lambda request, stop: seen.append(request) or [])
    args = ["gate", "run", "--in-cluster", "--inventory", str(tmp_path / "inventory.json"),
            "--cluster", "ml-gke", "--namespace", NAMESPACE]
    result = CliRunner().invoke(app, [*args, "--image-pull-secret", "ghcr-pull",
                                      "--image-pull-secret", "mirror.pull"])
    assert result.exit_code == 0, result.output
    assert seen[-1].image_pull_secrets == ("ghcr-pull", "mirror.pull")
    result = CliRunner().invoke(app, [*args, "--image-pull-secret", "Ghcr_Pull"])
    assert result.exit_code == 2 and "not a Kubernetes Secret name" in result.output


# -- readiness ----------------------------------------------------------------------------------
def _gate(**watch: Any) -> Any:
    ready = threading.Event()
    ready.set()
    synced = threading.Event()
    if watch.pop("synced", True):
        synced.set()
    w = SimpleNamespace(**{"synced": synced, "answered_at": 0.0, "failed_at": 0.0,
                           "last_error": "", "last_refusal": "", **watch})
    return SimpleNamespace(cluster="ml-gke", ready=ready, watch=w)


def test_readyz_follows_the_apis_last_answer() -> None:
    assert not_ready(_gate(answered_at=5.0)) == ""
    assert not_ready(_gate(answered_at=5.0, failed_at=3.0)) == ""  # answered since
    why = not_ready(_gate(answered_at=5.0, failed_at=7.0, last_error="ApiException: (403)"))
    assert "fails" in why and "403" in why
    assert "has not answered" in not_ready(_gate(synced=False, last_error="(403)"))
    starting = _gate()
    starting.ready.clear()
    assert not_ready(starting) == "starting"
