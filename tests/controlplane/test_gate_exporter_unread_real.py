"""A proven GPU node where the gate finds no DCGM exporter pod is said loudly, once (issue 37):
one Warning Event `GateExporterUnread` on the node ("no DCGM exporter on the node: passive
signals not read"), however many loops pass, and counted in the controller's metric
`accelfleet_gate_exporter_unread_nodes` while it lasts; a node whose exporter answers is read
and never said. Before, the reader returned silently and the node's counters went unread
with nothing to show for it. On the real control plane, the exporter a real process read
through the real API server's pods/proxy (tests/controlplane/test_gate_exporter_real.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from fleet.gate import DCGM_EXPORTER_NAMESPACE
from fleet.inventory import InventoryGate
from smoke.gate._exporter import NO_EXPORTER
from smoke.gate._metrics import render
from tests.controlplane.cluster import RealCluster
from tests.controlplane.test_gate_real import proven, wait_for
from tests.smoke.exporter_pods import HEALTHY, exporter_pod
from tests.smoke.gate_cluster import controller, gated_inventory, gke_gated_node, h100_report

pytestmark = pytest.mark.controlplane
POOL = "h100-train"
READ, UNREAD = "gke-h100-train-0", "gke-h100-train-1"
GAUGE = 'accelfleet_gate_exporter_unread_nodes{cluster="ml-gke",pool="h100-train"}'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def _unread_events(kube: RealCluster, node: str) -> list[str]:
    return [e["message"] for e in kube.events("Node", node)
            if e["reason"] == "GateExporterUnread"]


def _gauge(text: str) -> str | None:
    return next((line.split()[-1] for line in text.splitlines() if line.startswith(GAUGE)),
                None)


def test_a_proven_gpu_node_without_an_exporter_is_said_once_and_counted(
        kube: RealCluster, tmp_path: Path) -> None:
    inventory = gated_inventory({POOL: InventoryGate(quarantine_cap="1")})
    for n in (READ, UNREAD):
        kube.set_node_output(n, h100_report(n, 800.0))
    kube.ensure_namespace(DCGM_EXPORTER_NAMESPACE)
    kube.create("pods", DCGM_EXPORTER_NAMESPACE,
                exporter_pod("dcgm-exporter-0", READ, _free_port(), HEALTHY))
    with controller(kube, tmp_path, inventory, "ml-gke", context="envtest",
                    exporter_namespace=DCGM_EXPORTER_NAMESPACE, exporter_interval_s=1.0,
                    exporter_timeout_s=10.0) as running:
        for n in (READ, UNREAD):
            kube.add_node_object(gke_gated_node(POOL, n))
        said = wait_for(lambda: _unread_events(kube, UNREAD), timeout_s=180)
        assert NO_EXPORTER in said[0], said
        assert "app.kubernetes.io/name=dcgm-exporter" in said[0], said
        assert _gauge(render([running.gate])) == "1"
        # many more loops: the read node is read again and again, the unread one said once
        before = running.gate.exporters.reads
        wait_for(lambda: running.gate.exporters.reads >= before + 4, timeout_s=120)
        assert len(_unread_events(kube, UNREAD)) == 1, _unread_events(kube, UNREAD)
        assert _unread_events(kube, READ) == []
        assert proven(kube, UNREAD) and proven(kube, READ)  # unread: nothing is held
        # its exporter arrives: read, and no longer counted
        kube.create("pods", DCGM_EXPORTER_NAMESPACE,
                    exporter_pod("dcgm-exporter-1", UNREAD, _free_port(), HEALTHY))
        wait_for(lambda: _gauge(render([running.gate])) is None, timeout_s=120)
        assert len(_unread_events(kube, UNREAD)) == 1
