"""The gate reads the DCGM exporter of each proven GPU node between proofs (issue 37,
smoke.gate._exporter) on the real control plane: the exporter pod on the node is a real
process serving a recorded exporter text, read through the real API server's pods/proxy.

The node stand-in gives a pod that declares a container port this machine's own address (the
API server refuses to proxy to a loopback pod IP: "address not allowed") and runs a pod
annotated `standin.accelfleet.io/own-command` with its own command beside the canned proof
output (tests/controlplane/_kubelet.py). With the rendered RBAC (a Role for pods/proxy in the
exporter's namespace, GateControllerArgs.exporter_namespace), the audit log shows the read
granted; without it, refused and said."""

from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from components.k8s._gate import NAME, GateControllerArgs, gate_objects
from fleet.gate import DCGM_EXPORTER_NAMESPACE
from fleet.inventory import InventoryGate
from tests.controlplane import test_gate_rbac_real as R
from tests.controlplane._rest import RestError
from tests.controlplane.cluster import RealCluster
from tests.controlplane.test_gate_rbac_real import audit, deploy_rbac, used
from tests.controlplane.test_gate_real import proven, state, wait_for
from tests.smoke.exporter_pods import DBE, HEALTHY, exporter_pod
from tests.smoke.gate_cluster import (
    NAMESPACE,
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
)

pytestmark = pytest.mark.controlplane
# the audited plane of the RBAC test (its fixtures, asked for by name in the tests below)
audited, akube = R.audited, R.akube
POOL = "h100-train"
SICK, WELL = "gke-h100-train-0", "gke-h100-train-1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def _exporters(kube: RealCluster) -> None:
    kube.ensure_namespace(DCGM_EXPORTER_NAMESPACE)
    for i, (node, text) in enumerate(((SICK, DBE), (WELL, HEALTHY))):
        kube.create("pods", DCGM_EXPORTER_NAMESPACE,
                    exporter_pod(f"dcgm-exporter-{i}", node, _free_port(), text))


def _health_events(kube: RealCluster, node: str) -> list[str]:
    return [e["message"] for e in kube.events("Node", node) if e["reason"] == "GateHealthSignal"]


def _scenario(kube: RealCluster, tmp_path: Path, api: Any = None) -> Any:
    inventory = gated_inventory({POOL: InventoryGate(quarantine_cap="1")})
    for n in (SICK, WELL):
        kube.set_node_output(n, h100_report(n, 800.0))
    _exporters(kube)
    return controller(kube, tmp_path, inventory, "ml-gke", context="envtest", client=api,
                      exporter_namespace=DCGM_EXPORTER_NAMESPACE, exporter_interval_s=1.0,
                      exporter_timeout_s=10.0)


def test_a_dbe_on_the_exporter_quarantines_its_node_and_a_healthy_text_does_nothing(
        kube: RealCluster, tmp_path: Path) -> None:
    with _scenario(kube, tmp_path) as running:
        for n in (SICK, WELL):
            kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: state(kube, SICK) == "failed", timeout_s=180)
        said = wait_for(lambda: _health_events(kube, SICK))
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL=1 on GPU 1" in said[0], said
        wait_for(lambda: (kube.get("nodes", "", SICK)["metadata"]["labels"] or {}).get(
            "accelfleet.io/smoke") == "failed")
        # the healthy node: read (more than once), nothing said, still proven
        wait_for(lambda: running.gate.exporters.reads >= 4)
        assert proven(kube, WELL) and _health_events(kube, WELL) == []
        assert running.gate.summary.errors == [], running.gate.summary.errors


def _rendered(exporter: bool) -> list[dict[str, Any]]:
    return gate_objects(GateControllerArgs(
        cluster="ml-gke", namespace=NAMESPACE, inventory={},
        exporter_namespace=DCGM_EXPORTER_NAMESPACE if exporter else None))


def test_the_rendered_role_grants_the_proxy_read(request: pytest.FixtureRequest,
                                                 tmp_path: Path) -> None:
    kube: RealCluster = request.getfixturevalue("akube")
    log: Path = request.getfixturevalue("audited")[1]
    kube.ensure_namespace(DCGM_EXPORTER_NAMESPACE)
    since = time.time()
    api = deploy_rbac(kube, _rendered(exporter=True))
    with _scenario(kube, tmp_path, api) as running:
        for n in (SICK, WELL):
            kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: state(kube, SICK) == "failed", timeout_s=180)
        granted, refused = used(audit(log, since))
        assert refused == [], refused
        # made and granted (the audit helper files a call its module's rendering lacks
        # under "cluster"); the ClusterRole grants no pods/proxy: the Role did
        assert any(p[2:] == ("pods/proxy", "get") for p in granted), sorted(granted)
        (cluster_role,) = [o for o in _rendered(exporter=True) if o["kind"] == "ClusterRole"]
        assert not any("pods/proxy" in r["resources"] for r in cluster_role["rules"])
        assert running.gate.summary.errors == []


def test_without_the_role_the_proxy_read_is_refused_and_said(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    kube: RealCluster = request.getfixturevalue("akube")
    log: Path = request.getfixturevalue("audited")[1]
    kube.ensure_namespace(DCGM_EXPORTER_NAMESPACE)
    for plural in ("rolebindings", "roles"):
        with contextlib.suppress(RestError):
            kube.rest.delete(plural, DCGM_EXPORTER_NAMESPACE, NAME)
    since = time.time()
    api = deploy_rbac(kube, _rendered(exporter=False))
    with _scenario(kube, tmp_path, api) as running:
        for n in (SICK, WELL):
            kube.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: any("pods/proxy" in e and "403" in e
                             for e in running.gate.summary.errors), timeout_s=180)
        _, refused = used(audit(log, since))
        assert any("pods/proxy" in r for r in refused), refused
        assert state(kube, SICK) == "proven"  # unread: nothing judged, nothing held
