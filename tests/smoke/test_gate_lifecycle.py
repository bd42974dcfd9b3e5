"""A gated node's lifecycle on the fake API server (issue 35): states visible to kubectl, a
failed node out of the autoscaler's startup-taint prefix (its own taint, a cordon, the pool's
`on_fail`), a fresh proof on `smoke release`, `gate open` + `gate close` and `gate run --once`,
`gate open` as a pool state new nodes follow, rolling re-proof within `max_unavailable`, and
shadow mode. Where the behaviour is the API's (taints, cordon, scheduling) the real control
plane shows it too (test_gate_lifecycle_plane.py). The patches themselves and the proof
deadline, without a cluster, are in test_gate_patches.py."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleet.gate import POOLS_CONFIGMAP, InventoryGate
from fleet.labels import (
    GATE_CONDITION,
    GATE_LABEL,
    GATE_MODE_LABEL,
    GATE_OPEN_ANNOTATION,
    GATE_PROOF_ANNOTATION,
    GATE_TAINT_KEY,
    GATE_UNDO_ANNOTATION,
    RUN_LABEL,
    SMOKE_KEY,
    STARTUP_TAINT_PREFIX,
)
from smoke.gate import lifecycle as L
from tests.smoke.gate_cluster import (
    NAMESPACE,
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
)
from tests.smoke.test_gate import events, gate_state, node, tainted, user_pod, wait_for

POOL = "h100-train"
FAILED_TAINT = {"key": "accelfleet.io/gate", "value": "failed", "effect": "NoSchedule"}
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


@pytest.fixture(autouse=True)
def _no_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))


def inventory_with(**gate: Any) -> Any:
    return gated_inventory({POOL: InventoryGate(**gate)})


def cond(cluster: Any, name: str) -> dict[str, Any]:
    return next((c for c in node(cluster, name)["status"].get("conditions") or []
                 if c["type"] == GATE_CONDITION), {})


def annotations(cluster: Any, name: str) -> dict[str, str]:
    return dict(node(cluster, name)["metadata"].get("annotations") or {})


def startup_tainted(cluster: Any, name: str) -> bool:
    return any(str(t.get("key", "")).startswith(STARTUP_TAINT_PREFIX)
               for t in node(cluster, name)["spec"].get("taints") or [])


def held_as_failed(cluster: Any, name: str) -> bool:
    got = node(cluster, name)
    return FAILED_TAINT in (got["spec"].get("taints") or []) and bool(
        got["spec"].get("unschedulable"))


def proven_node(name: str, *, age_h: float, run: str) -> dict[str, Any]:
    """A node proven `age_h` hours ago: no gate taint, `proven`, its proof recorded."""
    raw = gke_gated_node(POOL, name)
    raw["spec"]["taints"] = [t for t in raw["spec"]["taints"] if t["key"] != GATE_TAINT_KEY]
    at = (datetime.now(UTC) - timedelta(hours=age_h)).strftime("%Y-%m-%dT%H:%M:%SZ")
    raw["metadata"].setdefault("labels", {})[GATE_LABEL] = "proven"
    raw["metadata"].setdefault("annotations", {})[GATE_PROOF_ANNOTATION] = json.dumps(
        {"at": at, "tiers": "0-2", "version": "test", "run": run, "verdict": "pass",
         "peers": []}, sort_keys=True)
    return raw


# -- states visible to kubectl ------------------------------------------------------------
def test_each_state_is_on_the_label_and_the_condition(fake_cluster: Any, tmp_path: Path
                                                      ) -> None:
    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 800.0))
    with controller(fake_cluster, tmp_path, gated_inventory(), "ml-gke"):
        fake_cluster.add_node_object(gke_gated_node(POOL, n), ready=False)
        wait_for(lambda: gate_state(fake_cluster, n) == "unproven")  # seen, not yet Ready
        wait_for(lambda: (cond(fake_cluster, n).get("status"), cond(fake_cluster, n).get(
            "reason")) == ("Unknown", "AwaitingProof"))  # the condition follows the label
        assert tainted(fake_cluster, n)
        fake_cluster.set_ready(n)
        wait_for(lambda: gate_state(fake_cluster, n) == "proven")
    seen = []  # every label and condition the node went through, from the change log
    for _, _, (plural, _, name), obj in fake_cluster.changes():
        if plural == "nodes" and name == n:
            label = (obj["metadata"].get("labels") or {}).get(GATE_LABEL)
            c = next((c for c in obj.get("status", {}).get("conditions") or []
                      if c["type"] == GATE_CONDITION), {})
            step = (label, c.get("status"), c.get("reason"))
            if not seen or seen[-1] != step:
                seen.append(step)
    assert ("unproven", "Unknown", "AwaitingProof") in seen
    assert ("proving", "Unknown", "Proving") in seen
    assert seen[-1] == ("proven", "True", "ProofPassed")
    order = [s[0] for s in seen]
    assert order.index("unproven") < order.index("proving") < order.index("proven")


# -- a failed node, out of the startup-taint prefix ----------------------------------------
def test_a_failed_node_swaps_the_startup_taint_for_its_own_and_is_cordoned_and_kept(
        fake_cluster: Any, tmp_path: Path) -> None:
    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 300.0))  # below the floor
    with controller(fake_cluster, tmp_path, gated_inventory(), "ml-gke"):
        fake_cluster.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: gate_state(fake_cluster, n) == "failed")
        wait_for(lambda: (node(fake_cluster, n)["metadata"].get("labels") or {}).get(
            SMOKE_KEY) == "failed")  # quarantined within the cap too
    assert not startup_tainted(fake_cluster, n)  # the autoscaler counts it Ready
    assert held_as_failed(fake_cluster, n)
    ann = annotations(fake_cluster, n)
    assert ann[SCALE_DOWN_DISABLED] == "true" and ann[DO_NOT_DISRUPT] == "true"  # keep
    assert GATE_PROOF_ANNOTATION not in ann
    undo = json.loads(ann[GATE_UNDO_ANNOTATION])
    assert undo == {"cordoned": True, "annotations": [SCALE_DOWN_DISABLED, DO_NOT_DISRUPT],
                    "on_fail": "keep"} or undo["annotations"] == sorted(
        [SCALE_DOWN_DISABLED, DO_NOT_DISRUPT])
    c = cond(fake_cluster, n)
    assert (c["status"], c["reason"]) == ("False", "ProofFailed")
    failed = [e for e in events(fake_cluster, n) if e["reason"] == "GateProofFailed"]
    assert failed and "on_fail: keep" in failed[0]["message"]


def test_on_fail_replace_leaves_the_node_to_the_autoscaler(fake_cluster: Any,
                                                           tmp_path: Path) -> None:
    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 300.0))
    with controller(fake_cluster, tmp_path, inventory_with(on_fail="replace"), "ml-gke"):
        fake_cluster.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: gate_state(fake_cluster, n) == "failed")
    ann = annotations(fake_cluster, n)
    assert SCALE_DOWN_DISABLED not in ann and DO_NOT_DISRUPT not in ann
    assert held_as_failed(fake_cluster, n) and not startup_tainted(fake_cluster, n)


# -- a fresh proof -------------------------------------------------------------------------
def test_smoke_release_sends_a_failed_quarantined_node_to_a_fresh_proof(
        fake_cluster: Any, tmp_path: Path) -> None:
    from smoke.cluster.release import release
    from tests.smoke.gate_cluster import client_of

    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 300.0))
    with controller(fake_cluster, tmp_path, gated_inventory(), "ml-gke") as running:
        fake_cluster.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: (node(fake_cluster, n)["metadata"].get("labels") or {}).get(
            SMOKE_KEY) == "failed")
        proofs = running.gate.summary.proofs
        fake_cluster.set_node_output(n, h100_report(n, 800.0))  # repaired by hand
        report = release({"ml-gke": client_of(fake_cluster, tmp_path)}, nodes=[n])
        assert [a.state for a in report.actions] == ["released"]
        assert "fresh" in report.actions[0].detail or "proves it afresh" in \
            report.actions[0].detail
        wait_for(lambda: gate_state(fake_cluster, n) == "proven")
        assert running.gate.summary.proofs == proofs + 1  # a new proof, not the old verdict
    got = node(fake_cluster, n)
    assert not got["spec"].get("unschedulable")
    assert not any(t["key"] in (GATE_TAINT_KEY, FAILED_TAINT["key"], SMOKE_KEY)
                   for t in got["spec"].get("taints") or [])
    ann = annotations(fake_cluster, n)
    assert SCALE_DOWN_DISABLED not in ann and DO_NOT_DISRUPT not in ann
    assert GATE_UNDO_ANNOTATION not in ann
    # between the release and the new pass, the node waited unproven with the startup taint
    states = [((o["metadata"].get("labels") or {}).get(GATE_LABEL),
               any(t["key"] == GATE_TAINT_KEY for t in o["spec"].get("taints") or []))
              for _, _, (plural, _, name), o in fake_cluster.changes()
              if plural == "nodes" and name == n]
    assert ("unproven", True) in states[states.index(next(s for s in states
                                                          if s[0] == "failed")):]


def test_release_keeps_a_cordon_and_an_annotation_that_were_somebody_elses(
        fake_cluster: Any, tmp_path: Path) -> None:
    """The gate undoes only what it did: a node cordoned by an operator before its proof
    failed stays cordoned after the fresh proof's release; their annotation stays."""
    from smoke.cluster.release import release
    from tests.smoke.gate_cluster import client_of

    n = "gke-h100-train-0"
    fake_cluster.set_node_command(n, ["python", "-c", "import sys, time; time.sleep(3); "
                                      "sys.stdout.write(sys.argv[1])", h100_report(n, 300.0)])
    with controller(fake_cluster, tmp_path, inventory_with(quarantine_cap="10%"), "ml-gke"):
        fake_cluster.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: gate_state(fake_cluster, n) == "proving")
        run_id = annotations(fake_cluster, n)["accelfleet.io/gate-run"]
        wait_for(lambda: any(o["kind"] == "Pod" and o.get("status", {}).get("phase") ==
                             "Running" for o in fake_cluster.objects(f"{RUN_LABEL}={run_id}")))
        # an operator cordons the node and protects it while its proof runs
        fake_cluster.patch("nodes", "", n, {"spec": {"unschedulable": True}, "metadata": {
            "annotations": {SCALE_DOWN_DISABLED: "true"}}})
        wait_for(lambda: gate_state(fake_cluster, n) == "failed")
    undo = json.loads(annotations(fake_cluster, n)[GATE_UNDO_ANNOTATION])
    assert undo["cordoned"] is False and undo["annotations"] == [DO_NOT_DISRUPT]
    release({"ml-gke": client_of(fake_cluster, tmp_path)}, nodes=[n])
    wait_for(lambda: gate_state(fake_cluster, n) == "unproven")
    got = node(fake_cluster, n)
    assert got["spec"].get("unschedulable") is True  # the operator's cordon
    assert annotations(fake_cluster, n).get(SCALE_DOWN_DISABLED) == "true"  # theirs
    assert DO_NOT_DISRUPT not in annotations(fake_cluster, n)  # the gate's
    assert startup_tainted(fake_cluster, n) and FAILED_TAINT not in got["spec"]["taints"]


def test_run_once_proves_a_failed_node_afresh_and_leaves_a_quarantined_one_to_release(
        fake_cluster: Any, tmp_path: Path) -> None:
    bad, held = "gke-h100-train-0", "gke-h100-train-1"
    for n in (bad, held):
        fake_cluster.set_node_output(n, h100_report(n, 300.0))
    # a cap of one node: the first to fail is quarantined, the other is only failed
    with controller(fake_cluster, tmp_path, inventory_with(quarantine_cap="1"), "ml-gke"):
        fake_cluster.add_node_object(gke_gated_node(POOL, bad))
        wait_for(lambda: (node(fake_cluster, bad)["metadata"].get("labels") or {}).get(
            SMOKE_KEY) == "failed")
        fake_cluster.add_node_object(gke_gated_node(POOL, held))
        wait_for(lambda: gate_state(fake_cluster, held) == "failed")
    assert (node(fake_cluster, held)["metadata"].get("labels") or {}).get(SMOKE_KEY) is None
    for n in (bad, held):
        fake_cluster.set_node_output(n, h100_report(n, 800.0))
    with controller(fake_cluster, tmp_path, inventory_with(quarantine_cap="1"), "ml-gke",
                    once=True, once_wait_s=60.0) as running:
        running.thread.join(120)
    summary = running.summary
    assert summary is not None
    assert summary.results[held].verdict == "pass"  # a fresh proof, passed
    assert gate_state(fake_cluster, held) == "proven"
    assert not node(fake_cluster, held)["spec"].get("unschedulable")
    assert summary.results[bad].verdict == "fail"  # quarantined: `smoke release` first
    assert "smoke release" in summary.results[bad].reason
    assert gate_state(fake_cluster, bad) == "failed" and not summary.ok


# -- gate open: a pool state new nodes follow ---------------------------------------------
def _request(cluster: Any, tmp_path: Path, inventory: Any) -> Any:
    from smoke.gate.session import GateRequest

    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(inventory.to_dict()), encoding="utf-8")
    kc = cluster.kubeconfig(tmp_path / "kubeconfig-cli", context="fake")
    return GateRequest(inventory=inv, kubeconfig=kc, contexts={"ml-gke": "fake"},
                       cluster="ml-gke", namespace=NAMESPACE)


def test_an_open_pool_opens_the_nodes_that_join_later_and_close_proves_them(
        fake_cluster: Any, tmp_path: Path) -> None:
    from smoke.gate.session import close_pool, open_pool

    inventory = gated_inventory()
    fake_cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})
    early, late = "gke-h100-train-0", "gke-h100-train-1"
    for n in (early, late):
        fake_cluster.set_node_output(n, h100_report(n, 800.0))
    fake_cluster.add_node_object(gke_gated_node(POOL, early), ready=False)
    request = _request(fake_cluster, tmp_path, inventory)
    opened = open_pool(request, POOL, reason="INC-7: proof image broken", by="ops@test")
    assert [c.what for c in opened] == ["opened"]  # recorded: no warning row
    cm = fake_cluster.get("configmaps", NAMESPACE, POOLS_CONFIGMAP)
    assert cm is not None and json.loads(cm["data"][POOL])["by"] == "ops@test"
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        fake_cluster.set_ready(early)
        fake_cluster.add_node_object(gke_gated_node(POOL, late))  # joins the open pool
        wait_for(lambda: gate_state(fake_cluster, late) == "open")
        assert not tainted(fake_cluster, late)
        record = json.loads(annotations(fake_cluster, late)[GATE_OPEN_ANNOTATION])
        assert record["reason"] == "INC-7: proof image broken" and record["was"] == "unproven"
        wait_for(lambda: "GateOpened" in [e["reason"] for e in events(fake_cluster, late)])
        assert running.gate.summary.proofs == 0  # an open pool's nodes are not proven
        from smoke.gate.session import gate_status

        status = gate_status(request).to_dict()  # `gate status` shows the pool open
        assert [(o["pool"], o["by"]) for o in status["open_pools"]] == [(POOL, "ops@test")]
        assert {n["node"]: n["state"] for n in status["nodes"]}[late] == "open"
        closed = close_pool(request, POOL, by="ops@test")
        assert sorted(c.what for c in closed) == ["closed", "closed"]
        assert POOL not in (fake_cluster.get("configmaps", NAMESPACE, POOLS_CONFIGMAP)
                            or {}).get("data", {})
        assert gate_status(request).open_pools == ()
        wait_for(lambda: all(gate_state(fake_cluster, n) == "proven" for n in (early, late)))
        assert running.gate.summary.proofs >= 1  # proven afresh once closed


def test_open_then_close_sends_a_failed_node_to_a_fresh_proof(fake_cluster: Any,
                                                              tmp_path: Path) -> None:
    """Of two failed nodes under a cap of one, the quarantined one goes back to failed on
    close (`smoke release` is its way back); the other gets its fresh proof."""
    from smoke.gate.session import close_pool, open_pool

    inventory = inventory_with(quarantine_cap="1")
    fake_cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})
    held, n = "gke-h100-train-0", "gke-h100-train-1"
    for name in (held, n):
        fake_cluster.set_node_output(name, h100_report(name, 300.0))
    request = _request(fake_cluster, tmp_path, inventory)
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        fake_cluster.add_node_object(gke_gated_node(POOL, held))
        wait_for(lambda: (node(fake_cluster, held)["metadata"].get("labels") or {}).get(
            SMOKE_KEY) == "failed")
        fake_cluster.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: gate_state(fake_cluster, n) == "failed")
        open_pool(request, POOL, reason="the floor was wrong", by="ops@test")
        got = node(fake_cluster, n)
        assert FAILED_TAINT not in (got["spec"].get("taints") or [])
        assert not got["spec"].get("unschedulable")
        assert not tainted(fake_cluster, n) and gate_state(fake_cluster, n) == "open"
        assert DO_NOT_DISRUPT not in annotations(fake_cluster, n)
        assert json.loads(annotations(fake_cluster, n)[GATE_OPEN_ANNOTATION])["was"] == \
            "failed"
        for name in (held, n):
            fake_cluster.set_node_output(name, h100_report(name, 800.0))
        proofs = running.gate.summary.proofs
        close_pool(request, POOL, by="ops@test")
        wait_for(lambda: gate_state(fake_cluster, n) == "proven")
        assert running.gate.summary.proofs > proofs
        assert gate_state(fake_cluster, held) == "failed" and held_as_failed(fake_cluster, held)


# -- rolling re-proof ----------------------------------------------------------------------
def _max_reproving(cluster: Any, names: list[str]) -> int:
    """The most of `names` that were `proving` at once, replayed from the change log."""
    now: dict[str, str] = {}
    most = 0
    for _, _, (plural, _, name), obj in cluster.changes():
        if plural == "nodes" and name in names:
            now[name] = str((obj["metadata"].get("labels") or {}).get(GATE_LABEL, ""))
            most = max(most, sum(1 for v in now.values() if v == "proving"))
    return most


def _reproven(cluster: Any, name: str) -> bool:
    proof = annotations(cluster, name).get(GATE_PROOF_ANNOTATION)
    return gate_state(cluster, name) == "proven" and proof is not None and not json.loads(
        proof)["run"].startswith("old-")


@pytest.mark.parametrize(("max_unavailable", "most"), [("10%", 1), ("2", 2), ("50%", 3)])
def test_a_rolling_reproof_takes_at_most_max_unavailable_of_the_pool(
        fake_cluster: Any, tmp_path: Path, max_unavailable: str, most: int) -> None:
    names = [f"gke-h100-train-{i}" for i in range(6)]
    for i, n in enumerate(names):
        report = h100_report(n, 800.0)
        fake_cluster.set_node_command(n, ["python", "-c", "import sys, time; time.sleep(2); "
                                          "sys.stdout.write(sys.argv[1])", report])
        fake_cluster.add_node_object(proven_node(n, age_h=48 + i, run=f"old-{i}"))
    inventory = inventory_with(reprove_interval_s=3600, max_unavailable=max_unavailable)
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", timeout_s=120):
        wait_for(lambda: all(_reproven(fake_cluster, n) for n in names), 240)
    assert _max_reproving(fake_cluster, names) == most
    assert all(not tainted(fake_cluster, n) for n in names)


def test_the_reproof_budget_rounds_down_and_is_never_below_one() -> None:
    assert L.reproof_budget("10%", 6) == 1 and L.reproof_budget("10%", 30) == 3
    assert L.reproof_budget("10%", 0) == 1 and L.reproof_budget("50%", 7) == 3
    assert L.reproof_budget("2", 1) == 2 and L.reproof_budget("100%", 5) == 5


# -- shadow mode ---------------------------------------------------------------------------
def test_shadow_mode_proves_and_reports_without_holding_anything(fake_cluster: Any,
                                                                 tmp_path: Path) -> None:
    good, bad = "gke-h100-train-0", "gke-h100-train-1"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    fake_cluster.set_node_output(bad, h100_report(bad, 300.0))
    inventory = inventory_with(mode="shadow")
    assert not inventory.pool(POOL).gate_enforced
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        for n in (good, bad):  # a shadow pool's nodes join without the gate taint
            raw = gke_gated_node(POOL, n)
            raw["spec"]["taints"] = [t for t in raw["spec"]["taints"]
                                     if t["key"] != GATE_TAINT_KEY]
            fake_cluster.add_node_object(raw)
        wait_for(lambda: gate_state(fake_cluster, good) == "proven"
                 and gate_state(fake_cluster, bad) == "failed")
    assert running.gate.summary.results[bad].verdict == "fail"
    for n in (good, bad):
        assert (node(fake_cluster, n)["metadata"]["labels"] or {}).get(GATE_MODE_LABEL) == \
            "shadow"
    assert (cond(fake_cluster, bad)["status"], cond(fake_cluster, bad)["reason"]) == (
        "False", "ProofFailed")
    assert any("shadow mode, nothing is held" in e["message"] for e in events(fake_cluster,
                                                                              bad))
    for _, _, (plural, _, name), obj in fake_cluster.changes():  # never, at any version
        if plural == "nodes" and name in (good, bad):
            keys = {t["key"] for t in obj["spec"].get("taints") or []}
            assert GATE_TAINT_KEY not in keys and FAILED_TAINT["key"] not in keys
            assert SMOKE_KEY not in keys and not obj["spec"].get("unschedulable")
            assert SMOKE_KEY not in (obj["metadata"].get("labels") or {})


def test_shadow_mode_never_proves_a_node_that_runs_work(fake_cluster: Any,
                                                        tmp_path: Path) -> None:
    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 800.0))
    raw = gke_gated_node(POOL, n)
    raw["spec"]["taints"] = [t for t in raw["spec"]["taints"] if t["key"] != GATE_TAINT_KEY]
    fake_cluster.set_node_command(n, ["python", "-c", "import time; time.sleep(60)"])
    fake_cluster.add_node_object(raw)
    user_pod(fake_cluster, "user-a", POOL, 8)  # nothing holds the node: work lands at once
    wait_for(lambda: (fake_cluster.get("pods", "default", "user-a") or {}).get(
        "status", {}).get("phase") == "Running")
    with controller(fake_cluster, tmp_path, inventory_with(mode="shadow"), "ml-gke") as r:
        wait_for(lambda: gate_state(fake_cluster, n) == "unproven")
        time.sleep(2.0)  # rounds of the controller's loop go by (0.5 s each)
    assert r.gate.summary.proofs == 0 and gate_state(fake_cluster, n) == "unproven"
