"""The gate's node-hours and metrics on the fake API server (split from test_gate.py): the
OpenMetrics after a scale-up, and the unproven and quarantined node-hours kept on the
Lease across a controller restart or a controller killed without releasing it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.smoke.gate_cluster import (
    NAMESPACE,
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
    pool,
)
from tests.smoke.test_gate import gate_state
from tests.waiting import wait_for


@pytest.fixture(autouse=True)
def _no_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))


def test_metrics_and_health_after_a_scale_up(fake_cluster: Any, tmp_path: Path) -> None:
    import urllib.request

    from smoke.gate._metrics import node_hourly_usd
    from smoke.gate._serve import Servers

    inventory = gated_inventory()
    good, bad = "gke-h100-train-0", "gke-h100-train-1"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    fake_cluster.set_node_output(bad, h100_report(bad, 300.0))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        servers = Servers([running.gate], health_port=0, metrics_port=None,
                          host="127.0.0.1").start()
        try:
            port = servers.bound()[0]

            def get(path: str) -> tuple[int, str]:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}") as resp:
                        return resp.status, resp.read().decode()
                except urllib.error.HTTPError as exc:
                    return exc.code, ""

            fake_cluster.join([gke_gated_node("h100-train", n) for n in (good, bad)],
                              ready_after_s=0.2)
            wait_for(lambda: gate_state(fake_cluster, good) == "proven"
                     and gate_state(fake_cluster, bad) == "failed")
            time.sleep(0.6)  # one more loop: the node-hours of the failed node
            assert get("/healthz")[0] == 200 and get("/readyz")[0] == 200
            code, text = get("/metrics")
        finally:
            servers.stop()
    assert code == 200 and text.endswith("# EOF\n")
    lines = text.splitlines()
    labels = 'cluster="ml-gke",pool="h100-train",team="research"'
    assert f'accelfleet_gate_nodes{{{labels},state="proven"}} 1' in lines
    assert f'accelfleet_gate_nodes{{{labels},state="quarantined"}} 1' in lines
    assert 'accelfleet_gate_proofs_total{cluster="ml-gke",pool="h100-train",verdict="pass"} 1' \
        in lines
    assert 'accelfleet_gate_ready_to_proven_seconds_count{cluster="ml-gke",pool="h100-train"}' \
        ' 1' in lines
    assert 'accelfleet_gate_leader{cluster="ml-gke"} 1' in lines
    hours = {ln.split(" ")[0]: float(ln.split(" ")[1]) for ln in lines
             if ln.startswith(("accelfleet_gate_unproven_", "accelfleet_gate_quarantined_"))}
    unproven = hours[f"accelfleet_gate_unproven_node_hours_total{{{labels}}}"]
    quarantined = hours[f"accelfleet_gate_quarantined_node_hours_total{{{labels}}}"]
    assert unproven > 0 and quarantined > 0
    rate = node_hourly_usd(pool(inventory, "h100-train"))
    assert rate is not None and rate > 0  # a3-highgpu-8g has a public list price
    cost = hours[f"accelfleet_gate_quarantined_cost_usd_total{{{labels}}}"]
    assert abs(cost - round(quarantined, 6) * rate) < 0.01


def _hours(gate: Any, kind: str) -> float:
    return sum(h for (_, _, k), h in gate.node_hours.items() if k == kind)


def _lease_hours(cluster: Any) -> dict[tuple[str, str, str], float]:
    from fleet.labels import GATE_NODE_HOURS_ANNOTATION
    from smoke.gate.controller import LEASE_NAME

    lease = cluster.get("leases", NAMESPACE, LEASE_NAME)
    rows = json.loads(lease["metadata"]["annotations"][GATE_NODE_HOURS_ANNOTATION])
    return {(r["pool"], r["team"], r["kind"]): r["hours"] for r in rows}


def _hours_scenario(cluster: Any) -> tuple[Any, str, str]:
    """A node that never turns Ready (unproven) and one that fails its proof (quarantined)."""
    inventory = gated_inventory()
    waiting, bad = "gke-h100-train-0", "gke-h100-train-1"
    cluster.set_node_output(bad, h100_report(bad, 300.0))  # below the H100 floor
    cluster.add_node_object(gke_gated_node("h100-train", waiting), ready=False)
    return inventory, waiting, bad


def test_node_hours_survive_a_controller_restart(fake_cluster: Any, tmp_path: Path) -> None:
    """Issue 26 item 6: unproven and quarantined node-hours per pool and team are totals; a
    restarted controller continues them from its Lease instead of starting from 0."""
    from smoke.gate._metrics import render

    inventory, _, bad = _hours_scenario(fake_cluster)
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", identity="gate-a") as first:
        fake_cluster.join([gke_gated_node("h100-train", bad)], ready_after_s=0.1)
        wait_for(lambda: gate_state(fake_cluster, bad) == "failed")
        # a test's patience: enough node-hours that a fresh start would be visibly behind
        wait_for(lambda: _hours(first.gate, "unproven") > 3 / 3600
                 and _hours(first.gate, "quarantined") > 1 / 3600)
    before = dict(first.gate.node_hours)
    on_lease = _lease_hours(fake_cluster)  # written as the first one released its Lease
    assert all(on_lease[k] >= v - 1e-6 for k, v in before.items())
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", identity="gate-b") as second:
        wait_for(lambda: second.gate.adopted)  # leader, and its first loop begun
        after = dict(second.gate.node_hours)
        text = render([second.gate])
    for key, hours in before.items():
        assert after.get(key, 0.0) >= hours - 1e-6, key  # the total does not drop
    labels = 'cluster="ml-gke",pool="h100-train",team="research"'
    exported = {ln.split(" ")[0]: float(ln.split(" ")[1]) for ln in text.splitlines()
                if "_node_hours_total" in ln}
    assert exported[f"accelfleet_gate_unproven_node_hours_total{{{labels}}}"] >= round(
        before[("h100-train", "research", "unproven")], 6) - 1e-6


def test_node_hours_survive_a_controller_killed_without_releasing(fake_cluster: Any,
                                                                  tmp_path: Path) -> None:
    """A leader killed (no release) loses at most its last renewal's interval: the next
    leader continues from what the Lease carries, and its standby exported the same."""
    inventory, _, bad = _hours_scenario(fake_cluster)
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", identity="gate-a") as first, \
            controller(fake_cluster, tmp_path, inventory, "ml-gke",
                       identity="gate-b") as standby:
        fake_cluster.join([gke_gated_node("h100-train", bad)], ready_after_s=0.1)
        wait_for(lambda: gate_state(fake_cluster, bad) == "failed")
        leader, other = (first, standby) if first.gate.is_leader() else (standby, first)
        wait_for(lambda: _hours(leader.gate, "unproven") > 3 / 3600)
        wait_for(lambda: _hours(other.gate, "unproven") > 2 / 3600)  # the leader's, as read
        assert other.gate.summary.proofs == 0  # the standby proved nothing, counted nothing
        assert leader.gate.elector is not None
        leader.gate.elector.release = lambda: None  # killed: it never steps down
        leader.stop.set()
        leader.thread.join(60)
        kept = _lease_hours(fake_cluster)
        wait_for(lambda: other.gate.adopted and other.gate.is_leader(), 30)
        after = dict(other.gate.node_hours)
    assert kept[("h100-train", "research", "unproven")] > 2 / 3600
    for key, hours in kept.items():
        assert after.get(key, 0.0) >= hours - 1e-6, key
