"""The node stand-in as a kubelet is (issue 34): the readiness it reports is its own state.
A kubelet posts its Ready condition from what it knows of itself at every status update,
whatever the API object says meanwhile; the stand-in once read it back from the API, and a
heartbeat that read before `set_ready` wrote a stale NotReady over the Ready just posted (a
node of the 100-node gate benchmark stayed NotReady for good)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.controlplane.cluster import RealCluster
from tests.smoke.nodes import gke_node

pytestmark = pytest.mark.controlplane


def _ready(kube: RealCluster, name: str) -> str:
    node = kube.get("nodes", "", name) or {}
    return next((c["status"] for c in node.get("status", {}).get("conditions") or []
                 if c["type"] == "Ready"), "")


def _wait(what: Any, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not what():
        assert time.monotonic() < end, f"still not true after {timeout_s} s"
        time.sleep(0.1)


def test_the_heartbeat_posts_the_nodes_own_readiness_not_the_apis(kube: RealCluster) -> None:
    kube.add_node_object(gke_node("n1", "g2-standard-24", nodepool="a"), ready=False)
    assert _ready(kube, "n1") == "False"
    # another writer says Ready meanwhile: the node's own status update puts its word back
    kube.patch("nodes", "", "n1", {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "stale"}]}},
        subresource="status")
    assert _ready(kube, "n1") == "True"
    _wait(lambda: _ready(kube, "n1") == "False")
    kube.set_ready("n1")
    kube.patch("nodes", "", "n1", {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "stale"}]}},
        subresource="status")
    _wait(lambda: _ready(kube, "n1") == "True")
