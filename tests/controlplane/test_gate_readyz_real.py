"""Issue 35, "Metrics and health": the controller's /readyz reflects the Kubernetes API, on the
real control plane. A controller whose identity may not list the nodes (RBAC, the real
authorizer's 403) is not ready, and says why, however long it has waited (before: ready once
`sync_wait_s` passed, while every node list was refused); once a ClusterRole grants the list
and the watch, it turns ready."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from smoke.gate._serve import Servers
from smoke.gate.controller import Gate, GateOptions
from tests import waiting
from tests.controlplane.cluster import RealCluster
from tests.smoke.gate_cluster import gated_inventory

pytestmark = pytest.mark.controlplane
wait_for = partial(waiting.wait_for, timeout_s=120.0, every_s=0.2)
USER = "system:serviceaccount:accelfleet-gate:readyz-probe"
ROLE = "accelfleet-readyz-probe"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def refused_gate(kube: RealCluster, tmp_path: Path) -> Iterator[tuple[Gate, int]]:
    """A controller as USER (no permission yet), its health endpoint on a free port."""
    client = kube.plane.client(as_user=USER)
    gate = Gate(client, "ml-gke", gated_inventory(), GateOptions(
        namespace="accelfleet-gate", elect=False, sync_wait_s=1.0))
    port = _port()
    servers = Servers([gate], health_port=port, metrics_port=None, host="127.0.0.1").start()
    stop = threading.Event()
    thread = threading.Thread(target=gate.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield gate, port
    finally:
        stop.set()
        thread.join(60)
        servers.stop()
        for plural in ("clusterrolebindings", "clusterroles"):
            try:
                kube.delete(plural, "", ROLE)
            except Exception:
                pass


def test_readyz_is_not_ready_while_the_node_list_is_refused_then_ready(
        kube: RealCluster, refused_gate: tuple[Gate, int]) -> None:
    gate, port = refused_gate
    wait_for(gate.ready.is_set)  # past sync_wait_s: the old /readyz said ready here
    wait_for(lambda: gate.watch.errors >= 2)  # refused, and refused again after a backoff
    code, body = _get(port, "/readyz")
    assert code == 503, body
    assert "ml-gke" in body and ("403" in body or "Forbidden" in body or "forbidden" in body)
    assert _get(port, "/healthz")[0] == 200  # alive: only the API refuses it
    kube.create("clusterroles", "", {
        "metadata": {"name": ROLE},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]}]})
    kube.create("clusterrolebindings", "", {
        "metadata": {"name": ROLE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": ROLE},
        "subjects": [{"kind": "User", "name": USER, "apiGroup": "rbac.authorization.k8s.io"}]})
    wait_for(lambda: _get(port, "/readyz")[0] == 200)  # after the watch's backoff
