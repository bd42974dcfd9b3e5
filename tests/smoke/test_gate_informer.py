"""The gate's pod cache (smoke/gate/_informer.py, issue 35 "Scale"): the idle check reads one
list-then-watch of the pods, indexed by node, never a pod list per node per loop; the cache
follows adds, deletes, pods that end, 410 Expired and malformed pods (the fake API server
for the hostile answers). The real control plane's side: tests/controlplane/
test_gate_informer_real.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory import InventoryGate
from fleet.labels import GATE_LABEL, GATE_PROOF_ANNOTATION, GATE_TAINT_KEY
from smoke.gate._informer import PodInformer, PodRecord, record_of
from tests.smoke.gate_cluster import client_of, controller, gated_inventory, gke_gated_node
from tests.waiting import wait_for

POOL = "h100-train"
WORK = "work"


def _proven_a_week_ago(cluster: Any, name: str, i: int) -> None:
    """A node of the pool, Ready and proven (its proof recorded for its uid and boot ID, as
    the controller writes it) a week ago: due for its daily re-proof."""
    made = cluster.add_node_object(gke_gated_node(POOL, name))
    at = (datetime.now(UTC) - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    proof = {"verdict": "pass", "run": f"r{1700000000 + i:010d}-abcd", "at": at,
             "uid": made["metadata"]["uid"], "boot": made["status"]["nodeInfo"]["bootID"]}
    cluster.patch("nodes", "", name, {
        "metadata": {"labels": {GATE_LABEL: "proven"},
                     "annotations": {GATE_PROOF_ANNOTATION: json.dumps(proof)}},
        "spec": {"taints": [t for t in made["spec"].get("taints") or []
                            if t.get("key") != GATE_TAINT_KEY]}})


def _namespace(cluster: Any, name: str = WORK) -> None:
    if cluster.get("namespaces", "", name) is None:
        cluster.create("namespaces", "", {"metadata": {"name": name}})


def _workload(cluster: Any, node: str, name: str | None = None,
              owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A pod bound to `node` that stays Pending (its image never arrives: the fake's pull)."""
    _namespace(cluster)
    cluster.set_node_pull_s(node, 10**6)
    meta: dict[str, Any] = {"name": name or f"train-{node}"}
    if owners:
        meta["ownerReferences"] = owners
    return dict(cluster.create("pods", WORK, {
        "metadata": meta,
        "spec": {"nodeName": node, "restartPolicy": "Never",
                 "tolerations": [{"operator": "Exists"}],
                 "containers": [{"name": "c", "image": "trainer:1", "command": ["true"]}]}}))


def _pod_calls(cluster: Any) -> int:
    """GETs of every pod, lists and watches (the cache's list and watch, a per-node list)."""
    with cluster.lock:
        return sum(1 for method, path in cluster.requests
                   if method == "GET" and path.rstrip("/") == "/api/v1/pods")


# -- the controller: no pod list per node per loop ---------------------------------------------
def test_the_idle_check_reads_the_cache_not_a_pod_list_per_node(fake_cluster: Any,
                                                                 tmp_path: Path) -> None:
    nodes = [f"gke-{POOL}-{i}" for i in range(12)]
    for i, name in enumerate(nodes):
        _proven_a_week_ago(fake_cluster, name, i)
        _workload(fake_cluster, name)  # every node runs work: none may be re-proven
    inventory = gated_inventory({POOL: InventoryGate(reprove_interval_s=3600,
                                                     max_unavailable="100%")})
    asked: list[str] = []
    with controller(fake_cluster, tmp_path, inventory, "ml-gke") as running:
        gate = running.gate
        idle = gate._idle

        def counted(node: str) -> bool:
            asked.append(node)
            return idle(node)

        gate._idle = counted  # type: ignore[method-assign]
        before = _pod_calls(fake_cluster)
        # three rounds' worth of idle checks: each due node asked each round
        wait_for(lambda: all(asked.count(n) >= 3 for n in nodes), 120)
        made = _pod_calls(fake_cluster) - before
    assert running.summary is not None and running.summary.proofs == 0  # all busy
    # one list and the watches that follow it (each resumed at its timeout), never one a
    # node: 36 idle checks or more were answered from the cache
    assert len(asked) >= 3 * len(nodes)
    assert made <= 4, made


# -- the cache on its own ------------------------------------------------------------------
@pytest.fixture
def informer(fake_cluster: Any, tmp_path: Path) -> Iterator[tuple[PodInformer, list[Any]]]:
    from kubernetes import client as k

    stop = threading.Event()
    rejected: list[Any] = []
    pods = PodInformer(k.CoreV1Api(client_of(fake_cluster, tmp_path)), stop,
                       watch_timeout_s=2, wait=lambda _s: stop.wait(0.01),
                       rejected=lambda *args: rejected.append(args))
    thread = threading.Thread(target=pods.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: pods.synced.is_set())
        yield pods, rejected
    finally:
        stop.set()
        thread.join(30)


def test_the_cache_follows_pods_bound_added_deleted_and_ended(
        fake_cluster: Any, informer: tuple[PodInformer, list[Any]]) -> None:
    pods, _ = informer
    for n in ("n1", "n2", "n3"):
        fake_cluster.add_node(n)
    assert pods.idle("n1") and pods.idle("n2")
    _workload(fake_cluster, "n1")
    wait_for(lambda: not pods.idle("n1"))
    assert [r.phase for r in pods.busy("n1")] == ["Pending"] and pods.idle("n2")
    # a DaemonSet's pod runs on every node, idle or not
    _workload(fake_cluster, "n2", "agent-n2", [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                "name": "agent", "uid": "u-agent"}])
    wait_for(lambda: len(pods) == 2)
    assert pods.idle("n2")
    fake_cluster.delete("pods", WORK, "train-n1", None)
    wait_for(lambda: pods.idle("n1"))
    assert "n1" not in pods.by_node  # an emptied index entry goes (client-go)
    # a pod that ends (Succeeded) leaves the cache: its node is idle again
    fake_cluster.set_node_output("n3", "done\n")
    _namespace(fake_cluster)
    fake_cluster.create("pods", WORK, {"metadata": {"name": "once-n3"}, "spec": {
        "nodeName": "n3", "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "x:1", "command": ["true"]}]}})
    wait_for(lambda: fake_cluster.get("pods", WORK, "once-n3")["status"].get("phase")
             == "Succeeded")
    wait_for(lambda: pods.idle("n3"))
    assert pods.lists == 1  # all of it followed on the watch, never a list again


def test_a_410_relists_and_what_changed_meanwhile_is_seen(
        fake_cluster: Any, informer: tuple[PodInformer, list[Any]]) -> None:
    pods, _ = informer
    fake_cluster.add_node("n1")
    fake_cluster.add_node("n2")
    _workload(fake_cluster, "n2")
    wait_for(lambda: not pods.idle("n2"))
    # the next watch is held while pods change and the store compacts past its version
    held, opened = threading.Event(), threading.Event()
    open_watch = pods._open_watch

    def paused(rv: str) -> Any:
        opened.set()
        held.wait(60)
        return open_watch(rv)

    pods._open_watch = paused  # type: ignore[method-assign]
    wait_for(lambda: opened.is_set())  # the watch of the moment ran its course (2 s)
    _workload(fake_cluster, "n1")
    fake_cluster.delete("pods", WORK, "train-n2", None)
    fake_cluster.compact()  # the watch's version is gone: 410 Expired, then a new list
    pods._open_watch = open_watch  # type: ignore[method-assign]
    held.set()
    wait_for(lambda: pods.expired >= 1 and not pods.idle("n1") and pods.idle("n2"))
    assert pods.lists >= 2
    assert pods.waits  # the re-list waited on the reflector's backoff


def test_every_watch_answered_410_relists_after_backoff_and_keeps_the_index(
        fake_cluster: Any, informer: tuple[PodInformer, list[Any]]) -> None:
    pods, _ = informer
    fake_cluster.add_node("n1")
    fake_cluster.hostile_watch("pods", "expired", times=3)
    _workload(fake_cluster, "n1")
    wait_for(lambda: pods.expired >= 3 and not pods.idle("n1"))
    assert pods.lists >= 2 and len(pods.waits) >= 3  # a wait before every re-list
    assert pods.by_node == {"n1": {f"{WORK}/train-n1"}}


def test_a_pod_that_does_not_read_keeps_its_node_busy_and_is_reported_once(
        fake_cluster: Any, informer: tuple[PodInformer, list[Any]]) -> None:
    pods, rejected = informer
    fake_cluster.add_node("n1")
    fake_cluster.add_node("n2")
    _namespace(fake_cluster)
    fake_cluster.set_node_pull_s("n1", 10**6)
    fake_cluster.create("pods", WORK, {"metadata": {"name": "odd"},
                                       "spec": {"nodeName": "n1", "containers": []},
                                       "status": {"phase": 7}})  # a phase that is no text
    wait_for(lambda: not pods.idle("n1"))
    assert pods.busy("n1")[0].problem == "status.phase is not text"
    assert pods.idle("n2") and pods.skipped == 1
    assert [r[0] for r in rejected] == [f"{WORK}/odd"]  # reported once, by its key
    fake_cluster.delete("pods", WORK, "odd", None)
    wait_for(lambda: pods.idle("n1"))


def test_not_synced_is_never_idle(tmp_path: Path) -> None:
    stop = threading.Event()
    pods = PodInformer(object(), stop)  # type: ignore[arg-type]  # never run
    assert not pods.idle("n1")  # a node is never taken for idle on a guess


@pytest.mark.parametrize(("pod", "want"), [
    ({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}},
     PodRecord("n1", "Running", False)),
    ({"spec": {"nodeName": "n1"}, "status": {"phase": "Pending"},
      "metadata": {"ownerReferences": [{"kind": "DaemonSet"}]}},
     PodRecord("n1", "Pending", True)),
    ({"spec": {"nodeName": "n1"}, "status": {"phase": "Succeeded"}}, None),
    ({"spec": {"nodeName": "n1"}, "status": {"phase": "Failed"}}, None),
    ({"spec": {"nodeName": "n1"}, "status": {"phase": "Unknown"}}, None),
    ({"spec": {}, "status": {"phase": "Pending"}}, None),  # not scheduled: no node yet
])
def test_what_is_kept_of_a_pod(pod: dict[str, Any], want: PodRecord | None) -> None:
    assert record_of(pod) == want
    assert want is None or want.busy == (not want.daemonset)
