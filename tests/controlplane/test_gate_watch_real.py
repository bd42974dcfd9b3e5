"""The gate's node watch across a real expiry (issue 34 item 3): a control plane of this
module's own whose API server compacts etcd every second (`--etcd-compaction-interval=1s`)
and serves watches from etcd itself (`--watch-cache=false`: a watch then reads etcd's own
history, which the compaction cuts, rather than the API server's cache and its window). Both
flags as kube-apiserver v1.36.2 `--help` states them; a watch re-established
from a compacted revision is answered 410 Gone ("required revision has been compacted",
kubernetes/kubernetes issue 83938, read 2026-11-28).

The controller's watch is held (its next call waits) while a node joins and etcd compacts
past the watch's resourceVersion; the test checks, with a watch of its own, that the version
is expired for real; released, the controller's watch gets 410, lists again, and the node
that joined across the expiry is proven."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from smoke.gate._watch import NodeWatch
from tests.controlplane._plane import ControlPlane, assets
from tests.controlplane.cluster import RealCluster, real_cluster
from tests.controlplane.test_gate_real import proven, wait_for
from tests.smoke.gate_cluster import controller, gated_inventory, gke_gated_node, h100_report

pytestmark = pytest.mark.controlplane
POOL = "h100-train"


@pytest.fixture(scope="module")
def compacting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if assets() is None:
        pytest.skip("no real control plane")
    plane = ControlPlane(tmp_path_factory.mktemp("compacting-plane"), controllers=True,
                         apiserver_args=["--watch-cache=false",
                                         "--etcd-compaction-interval=1s"]).start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def ckube(compacting: ControlPlane, tmp_path: Path) -> Iterator[RealCluster]:
    with real_cluster(compacting, tmp_path / "real-cluster") as cluster:
        yield cluster


def expired(kube: RealCluster, rv: str) -> bool:
    """Whether a watch of nodes from `rv` is answered 410 Gone now."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        resp = client.CoreV1Api(kube.rest.api).list_node(
            watch=True, resource_version=rv, timeout_seconds=1, _preload_content=False,
            _request_timeout=10)
    except ApiException as exc:
        return exc.status == 410
    try:
        for line in resp.read().decode().splitlines():
            event = json.loads(line) if line.strip() else {}
            if event.get("type") == "ERROR" and event["object"].get("code") == 410:
                return True
    finally:
        resp.release_conn()
    return False


def test_a_node_that_joins_across_a_real_watch_expiry_is_proven(
        ckube: RealCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = "gke-h100-train-0", "gke-h100-train-1"
    for n in (first, second):
        ckube.set_node_output(n, h100_report(n, 800.0))
    hold, held, release = threading.Event(), threading.Event(), threading.Event()
    held_rv: list[str] = []
    original = NodeWatch._watch

    def paused(self: NodeWatch, rv: str) -> Any:
        if hold.is_set() and not release.is_set():
            held_rv.append(rv)
            held.set()
            release.wait(120)
        return original(self, rv)

    monkeypatch.setattr(NodeWatch, "_watch", paused)
    with controller(ckube, tmp_path, gated_inventory(), "ml-gke", context="envtest",
                    watch_timeout_s=2) as running:
        ckube.add_node_object(gke_gated_node(POOL, first))
        wait_for(lambda: proven(ckube, first))
        hold.set()
        wait_for(held.is_set)  # the watch ended (its 2 s) and the next one waits
        lists_before = running.gate.watch.lists
        ckube.add_node_object(gke_gated_node(POOL, second))  # joins while nobody watches
        wait_for(lambda: expired(ckube, held_rv[-1]), every_s=0.5)  # compacted past it
        release.set()
        wait_for(lambda: proven(ckube, second))
        relists = running.gate.watch.lists - lists_before
    assert relists >= 1, "the node was seen without a list after the 410"
    print(f"\nfigure: {running.gate.watch.lists} node lists in all ({relists} after the held "
          f"watch's expiry), {running.gate.watch.resumes} watches resumed")
