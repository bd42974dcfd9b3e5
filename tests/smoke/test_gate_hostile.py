"""The gate against a hostile or broken API server (issue 35), on the fake API server where the
answer is hostile: a malformed node among good ones, a proof annotation without its offset or
a year ahead, a 410 on every watch, a watch line that never ends; and the quarantine's cap,
breaker and blame. `gate status` and `gate run --once` against it (a dripping Lease read, a
renewTime ahead of the clock, a node list that never answers) are in test_gate_hostile_cli.py,
which imports this module's helpers (_bad, _lease, _proven_by_hand, _status)."""

from __future__ import annotations

import copy
import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory import InventoryGate
from fleet.labels import GATE_LABEL, GATE_PROOF_ANNOTATION, GATE_TAINT_KEY, SMOKE_KEY
from tests.smoke.gate_cluster import (
    NAMESPACE,
    client_of,
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
    pool,
    tpu_report,
)
from tests.smoke.test_gate import events, gate_state, node, tainted, wait_for


def held(cluster: Any, name: str) -> bool:
    """Kept off work by the gate: its startup taint, or (a failed node) its own failed taint
    and a cordon (smoke.gate.lifecycle)."""
    from smoke.gate.lifecycle import FAILED_TAINT_KEY

    got = node(cluster, name)
    return tainted(cluster, name) or (any(
        t.get("key") == FAILED_TAINT_KEY for t in got["spec"].get("taints") or [])
        and bool(got["spec"].get("unschedulable")))


@pytest.fixture(autouse=True)
def _no_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))


def _bad(name: str, path: str, value: Any) -> dict[str, Any]:
    """A node of the gated pool h100-train whose field at dotted `path` is `value`."""
    obj = gke_gated_node("h100-train", name)
    *parents, last = path.split(".")
    here: Any = obj
    for p in parents:
        here = here.setdefault(p, {})
    here[last] = value
    return obj


# the three the issue names, and more of the class (served by the API server as stored: a
# conversion webhook or a proxy gone wrong, an object written around validation)
SERVED = {
    "taints a string": ("spec.taints", "nvidia.com/gpu=present:NoSchedule"),
    "conditions a string": ("status.conditions", "Ready"),
    "annotations a list": ("metadata.annotations", ["a=b"]),
    "a condition a list": ("status.conditions", [["Ready", "True"]]),
    "a taint key a number": ("spec.taints", [{"key": 7, "effect": "NoSchedule"}]),
    "status a string": ("status", "Ready"),
    "unschedulable a string": ("spec.unschedulable", "no"),
}


@pytest.mark.parametrize("case", sorted(SERVED))
def test_one_malformed_node_never_stops_the_gate_and_the_good_node_is_proven(
        fake_cluster: Any, tmp_path: Path, case: str) -> None:
    inventory = gated_inventory()
    good, bad = "gke-h100-train-0", "gke-h100-train-9"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    path, value = SERVED[case]
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", batch=1) as running:
        fake_cluster.add_node_object(_bad(bad, path, value))  # seen by the watch
        fake_cluster.add_node_object(gke_gated_node("h100-train", good))
        wait_for(lambda: gate_state(fake_cluster, good) == "proven")
        wait_for(lambda: any(e["reason"] == "GateNodeMalformed"
                             for e in events(fake_cluster, bad)))
        assert running.thread.is_alive()  # the controller lives on
        assert running.gate.guard.malformed.get("node", 0) >= 1
        from smoke.gate._metrics import render

        text = render([running.gate])
        assert 'accelfleet_gate_malformed_objects_total{cluster="ml-gke",kind="node"}' in text
    assert running.summary is not None and running.summary.results[good].verdict == "pass"
    assert bad not in running.summary.results  # no verdict on what does not read
    stored = node(fake_cluster, bad)
    assert (stored["metadata"].get("labels") or {}).get(GATE_LABEL) is None  # left alone


def test_malformed_nodes_in_a_list_are_skipped_there_too(fake_cluster: Any,
                                                         tmp_path: Path) -> None:
    """Through the list (the first one, each re-list) as well as the watch: items a proxy
    mangles (no metadata, a list for the labels, a number for the name, no object at all)."""
    inventory = gated_inventory()
    good = "gke-h100-train-0"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    junk = [{"kind": "Node"}, "gke-h100-train-5", None,
            _bad("gke-h100-train-6", "metadata.labels", ["accelfleet.io/pool"]),
            _bad("gke-h100-train-7", "metadata.name", 7)]

    def mangle(answer: Any) -> Any:
        if isinstance(answer, dict) and isinstance(answer.get("items"), list) and \
                answer.get("kind") == "NodeList":
            answer["items"] = [*answer["items"], *copy.deepcopy(junk)]
        return answer

    fake_cluster.add_node_object(gke_gated_node("h100-train", good))
    fake_cluster.lie("GET", "/api/v1/nodes", mangle)
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        wait_for(lambda: gate_state(fake_cluster, good) == "proven")
        assert running.gate.guard.malformed.get("node", 0) >= len(junk)
    assert running.summary is not None and running.summary.results[good].verdict == "pass"


def test_a_pod_that_does_not_read_keeps_its_node_from_a_reproof(fake_cluster: Any,
                                                                 tmp_path: Path) -> None:
    """The idle check reads the node's pods: one that does not read as a Pod (owners a
    string) means the node may be busy: no re-proof, no crash."""
    inventory = gated_inventory({"h100-train": InventoryGate(reprove_interval_s=1)})
    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 800.0))

    def mangle(answer: Any) -> Any:
        if isinstance(answer, dict) and answer.get("kind") == "PodList":
            answer["items"] = [*answer["items"], {
                "metadata": {"name": "odd", "ownerReferences": "DaemonSet"},
                "spec": {"nodeName": n}, "status": {"phase": "Running"}}]
        return answer

    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        fake_cluster.add_node_object(gke_gated_node("h100-train", n))
        wait_for(lambda: gate_state(fake_cluster, n) == "proven")
        first = json.loads(node(fake_cluster, n)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"]
        before = _pod_lists(fake_cluster)
        fake_cluster.lie("GET", "/api/v1/pods", mangle)
        wait_for(lambda: _pod_lists(fake_cluster) >= before + 3)  # its idle check read it
        assert running.thread.is_alive()
        assert running.gate.guard.malformed.get("pod", 0) >= 2
    assert json.loads(node(fake_cluster, n)["metadata"]["annotations"][
        GATE_PROOF_ANNOTATION])["run"] == first  # never taken while it may be busy


def _pod_lists(fake_cluster: Any) -> int:
    with fake_cluster.lock:
        return sum(1 for method, path in fake_cluster.requests
                   if method == "GET" and path == "/api/v1/pods")


# -- proof annotations -------------------------------------------------------------------------
def _proven_by_hand(name: str, at: str) -> dict[str, Any]:
    """A node that says it is proven: no gate taint, the label, a proof stamped `at` (anyone
    who may patch nodes can write that)."""
    obj = gke_gated_node("h100-train", name)
    obj["spec"]["taints"] = [t for t in obj["spec"]["taints"] if t["key"] != GATE_TAINT_KEY]
    obj["metadata"].setdefault("labels", {})[GATE_LABEL] = "proven"
    obj["metadata"].setdefault("annotations", {})[GATE_PROOF_ANNOTATION] = json.dumps(
        {"at": at, "run": "r2611280900-0a0a", "verdict": "pass", "tiers": "0-2"})
    return obj


@pytest.mark.parametrize("at", ["2026-11-28T09:00:00",  # no UTC offset: it crash-looped
                                "year-ahead",  # a year ahead: never re-proven before
                                "not a time"])
def test_a_proof_without_its_offset_or_ahead_of_the_clock_is_proven_again(
        fake_cluster: Any, tmp_path: Path, at: str) -> None:
    if at == "year-ahead":
        at = (datetime.now(UTC) + timedelta(days=365)).strftime("%Y-%m-%dT%H:%M:%SZ")
    inventory = gated_inventory({"h100-train": InventoryGate(reprove_interval_s=3600)})
    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 800.0))
    fake_cluster.add_node_object(_proven_by_hand(n, at))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        wait_for(lambda: json.loads(node(fake_cluster, n)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION]).get("run") != "r2611280900-0a0a")
        wait_for(lambda: gate_state(fake_cluster, n) == "proven")
        assert running.thread.is_alive()
    proof = json.loads(node(fake_cluster, n)["metadata"]["annotations"][GATE_PROOF_ANNOTATION])
    assert proof["at"].endswith("Z") and proof["verdict"] == "pass"
    assert datetime.fromisoformat(proof["at"].replace("Z", "+00:00")) <= datetime.now(UTC)


# -- the watch ---------------------------------------------------------------------------------
def _watch(fake_cluster: Any, tmp_path: Path, **kw: Any) -> tuple[Any, threading.Event,
                                                                   list[float]]:
    """A NodeWatch on the fake whose backoff waits are recorded, not slept (no timed
    assertion: the waits it asked for are the test)."""
    from kubernetes import client as k

    from smoke.gate._watch import NodeWatch

    stop = threading.Event()
    asked: list[float] = []

    def wait(seconds: float) -> bool:
        asked.append(seconds)
        return stop.wait(0.01)

    watch = NodeWatch(k.CoreV1Api(client_of(fake_cluster, tmp_path)), lambda _: None, stop,
                      watch_timeout_s=30, wait=wait, **kw)
    threading.Thread(target=watch.run, daemon=True).start()
    return watch, stop, asked


def test_a_410_on_every_watch_relists_only_after_client_gos_backoff(fake_cluster: Any,
                                                                    tmp_path: Path) -> None:
    fake_cluster.add_node("n1")
    fake_cluster.hostile_watch("nodes", "expired")
    watch, stop, asked = _watch(fake_cluster, tmp_path)
    try:
        wait_for(lambda: watch.lists >= 8)
    finally:
        stop.set()
    assert watch.expired >= 7
    # between two lists, always a wait: 0.8 s doubling to 30 s, each jittered up to twice
    steps = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0]
    for step, got in zip(steps, asked, strict=False):
        assert step <= got <= 2 * step
    assert len(asked) >= watch.lists - 1  # never a list without a wait before it
    assert watch.get("n1") is not None  # the nodes are still seen


def test_a_watch_line_that_never_ends_is_dropped_and_the_nodes_listed_again(
        fake_cluster: Any, tmp_path: Path) -> None:
    fake_cluster.add_node("n1")
    fake_cluster.hostile_watch("nodes", "endless", times=2)
    watch, stop, asked = _watch(fake_cluster, tmp_path, max_line_bytes=2**20)
    try:
        wait_for(lambda: watch.oversized >= 2 and watch.lists >= 3)
        fake_cluster.add_node("n2")  # the third watch is the server's own: it sees n2
        wait_for(lambda: watch.get("n2") is not None)
    finally:
        stop.set()
    assert asked[:2] and all(a >= 0.8 for a in asked[:2])
    assert watch.get("n1") is not None


# -- gate status -------------------------------------------------------------------------------
def _lease(fake_cluster: Any, renew: datetime | str, *, holder: str = "gate-0",
           spec: Any = None) -> None:
    if fake_cluster.get("namespaces", "", NAMESPACE) is None:
        fake_cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})
    old = fake_cluster.get("leases", NAMESPACE, "accelfleet-gate")
    if old is not None:  # the one the controller released
        fake_cluster.delete("leases", NAMESPACE, "accelfleet-gate", None)
    when = renew if isinstance(renew, str) else renew.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    fake_cluster.create("leases", NAMESPACE, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "accelfleet-gate", "namespace": NAMESPACE},
        "spec": spec if spec is not None else {
            "holderIdentity": holder, "renewTime": when, "leaseDurationSeconds": 15}})


def _status(fake_cluster: Any, tmp_path: Path, *more: str) -> Any:
    from tests.smoke.test_gate_cli import _files, _gate

    return _gate("status", *more, *_files(fake_cluster, tmp_path))


# -- the cap, the breaker, the blame ---------------------------------------------------------
def test_three_proofs_ending_together_with_a_cap_of_1_quarantine_exactly_one(
        fake_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window between counting the pool's quarantined nodes and quarantining is held
    open (each count waits for the others, up to 3 s): without the per-pool lock the three
    proofs all count none and quarantine all three."""
    import smoke.cluster.quarantine as Q

    real = Q._quarantined_units
    arrived = threading.Semaphore(0)
    gate_open = threading.Event()
    counting = [0]

    def slow_count(api: Any, pool_name: str) -> Any:
        counting[0] += 1
        if counting[0] >= 3:
            gate_open.set()
        arrived.release()
        gate_open.wait(3.0)  # three together, or give up waiting for the others
        return real(api, pool_name)

    monkeypatch.setattr(Q, "_quarantined_units", slow_count)
    inventory = gated_inventory({"h100-train": InventoryGate(quarantine_cap="1")})
    names = [f"gke-h100-train-{i}" for i in range(3)]
    for n in names:
        fake_cluster.set_node_output(n, h100_report(n, 300.0))  # below the floor: fails
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", batch=1, parallel=3) \
            as running:
        for n in names:
            fake_cluster.add_node_object(gke_gated_node("h100-train", n))
        wait_for(lambda: all(gate_state(fake_cluster, n) == "failed" for n in names)
                 and not running.gate.inflight, 90)  # every proof's quarantine done
    quarantined = [n for n in names
                   if (node(fake_cluster, n)["metadata"].get("labels") or {}).get(SMOKE_KEY)
                   == "failed"]
    assert len(quarantined) == 1
    assert all(held(fake_cluster, n) for n in names)  # the others stay gated


def test_the_breaker_stops_quarantine_when_most_of_a_pools_proofs_fail(
        fake_cluster: Any, tmp_path: Path) -> None:
    """Five new nodes, every proof failing (a broken image would do it): the first three are
    quarantined, then more than half of at least 4 verdicts failed: the breaker opens, the
    rest are held back with a Warning Event and the metric says so. They stay gated."""
    inventory = gated_inventory({"h100-train": InventoryGate(quarantine_cap="100%")})
    names = [f"gke-h100-train-{i}" for i in range(5)]
    for n in names:
        fake_cluster.set_node_output(n, h100_report(n, 300.0))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke", batch=1, parallel=1) \
            as running:
        for n in names:
            fake_cluster.add_node_object(gke_gated_node("h100-train", n))
        wait_for(lambda: all(gate_state(fake_cluster, n) == "failed" for n in names)
                 and not running.gate.inflight, 120)  # every proof's quarantine done
        from smoke.gate._metrics import render

        text = render([running.gate])
    assert 'accelfleet_gate_quarantine_breaker_open{cluster="ml-gke",pool="h100-train"} 1' \
        in text
    quarantined = [n for n in names
                   if (node(fake_cluster, n)["metadata"].get("labels") or {}).get(SMOKE_KEY)
                   == "failed"]
    assert len(quarantined) == 3
    kept = [n for n in names if n not in quarantined]
    for n in kept:
        wait_for(lambda n=n: any(e["reason"] == "GateQuarantineHeld"
                                 for e in events(fake_cluster, n)))
        assert held(fake_cluster, n)


def test_a_slice_with_one_bad_host_blames_it_and_proves_none_of_the_others(
        fake_cluster: Any, tmp_path: Path) -> None:
    inventory = gated_inventory()
    v5p = pool(inventory, "v5p-slice")
    hosts = [f"gke-v5p-slice-{i:02d}" for i in range(v5p.hosts_per_slice)]
    bad = hosts[1]
    for h in hosts:
        fake_cluster.set_node_output(h, tpu_report(h, v5p, 0.8 if h != bad else 0.2))
    with controller(fake_cluster, tmp_path, inventory, "ml-gke"):
        for h in hosts:
            fake_cluster.add_node_object(gke_gated_node("v5p-slice", h,
                                                        nodepool="v5p-slice-np"))
        wait_for(lambda: gate_state(fake_cluster, bad) == "failed")
        others = [h for h in hosts if h != bad]
        wait_for(lambda: all(any(e["reason"] == "GateUnitFailed"
                                 for e in events(fake_cluster, h)) for h in others))
    assert gate_state(fake_cluster, bad) == "failed"
    for h in others:
        assert gate_state(fake_cluster, h) != "proven" and tainted(fake_cluster, h)
        got = node(fake_cluster, h)
        assert GATE_PROOF_ANNOTATION not in (got["metadata"].get("annotations") or {})
        cond = next(c for c in got["status"]["conditions"] if c["type"] == "AccelfleetProof")
        assert cond["reason"] == "UnitFailed" and bad in cond["message"]
    _lease(fake_cluster, datetime.now(UTC))
    rows = json.loads(_status(fake_cluster, tmp_path, "--json").stdout)["nodes"]
    held = [r for r in rows if r["node"] in others]
    assert held and all(r["state"] == "unproven" and bad in r["reason"] for r in held)


def test_a_lease_that_does_not_read_is_never_acted_on_and_is_counted(
        fake_cluster: Any, tmp_path: Path) -> None:
    """A Lease whose spec is no mapping: no replica takes it as leader (nothing proven, the
    nodes stay gated: fail closed), none crashes, and the metric says why."""
    _lease(fake_cluster, "", spec="held by gate-0")
    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 800.0))
    fake_cluster.add_node_object(gke_gated_node("h100-train", n))
    with controller(fake_cluster, tmp_path, gated_inventory(), "ml-gke") as running:
        wait_for(lambda: running.gate.elector is not None and running.gate.elector.malformed
                 >= 3)
        from smoke.gate._metrics import render

        text = render([running.gate])
        assert running.thread.is_alive() and not running.gate.is_leader()
    assert 'accelfleet_gate_malformed_objects_total{cluster="ml-gke",kind="lease"}' in text
    assert tainted(fake_cluster, n) and gate_state(fake_cluster, n) == ""


def test_smoke_status_leaves_out_a_quarantined_node_that_does_not_read(
        fake_cluster: Any, tmp_path: Path) -> None:
    """`smoke status` lists the nodes labelled quarantined; one whose taints are a string (it
    crashed the listing) is listed with what is malformed about it (issue 38), never read as
    taints."""
    from smoke.cluster.release import quarantined

    ok = gke_gated_node("h100-train", "gke-h100-train-0")
    ok["metadata"]["labels"][SMOKE_KEY] = "failed"
    bad = _bad("gke-h100-train-1", "spec.taints", "accelfleet.io/smoke=failed:NoSchedule")
    bad["metadata"]["labels"][SMOKE_KEY] = "failed"
    fake_cluster.add_node_object(ok)
    fake_cluster.add_node_object(bad)
    rows = quarantined({"ml-gke": client_of(fake_cluster, tmp_path)})
    assert [(r.node, bool(r.problem)) for r in sorted(rows, key=lambda r: r.node)] == [
        ("gke-h100-train-0", False), ("gke-h100-train-1", True)]
    assert "spec.taints" in next(r.problem for r in rows if r.problem)
    assert not next(r for r in rows if r.problem).tainted


def test_smoke_release_of_a_node_that_does_not_read_says_so_and_changes_nothing(
        fake_cluster: Any, tmp_path: Path) -> None:
    from fleet.errors import SetupError
    from smoke.cluster.release import release

    n = "gke-h100-train-0"
    obj = gke_gated_node("h100-train", n)
    obj["metadata"]["labels"][SMOKE_KEY] = "failed"
    fake_cluster.add_node_object(obj)
    fake_cluster.lie("GET", f"/api/v1/nodes/{n}",
                     lambda a: {**a, "metadata": [a["metadata"]]} if isinstance(a, dict) else a)
    with pytest.raises(SetupError, match="does not read as a Node"):
        release({"ml-gke": client_of(fake_cluster, tmp_path)}, nodes=[n])
    assert (node(fake_cluster, n)["metadata"]["labels"]).get(SMOKE_KEY) == "failed"
