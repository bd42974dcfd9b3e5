"""pytest fixtures of the real control plane (loaded by tests/conftest.py).

- `control_plane`: one control plane for the whole run (etcd, kube-apiserver with RBAC,
  kube-scheduler, kube-controller-manager), with the CRDs the project deploys installed
  (Kueue v0.19.2, JobSet v0.12.0: tests/controlplane/crds, SOURCE.md says whence); stopped at
  the end of the run.
- `kube`: a test's cluster on it (`tests.controlplane.cluster.RealCluster`), emptied after.

A test that uses either carries the marker `controlplane`; without `KUBEBUILDER_ASSETS` naming
the binaries it is skipped with the reason (`tests.controlplane._plane.missing_reason`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.controlplane._plane import ControlPlane, assets, missing_reason
from tests.controlplane._rest import Rest, RestError
from tests.controlplane.cluster import RealCluster, real_cluster

CRDS = Path(__file__).parent / "crds"
# The API server's audit log records, at Metadata level, what the service accounts of this
# namespace ask (the gate controller's, under a token of its rendered RBAC:
# test_gate_rbac_real.py); nothing else is logged. One audited plane for the run instead of
# one more per worker.
AUDITED_NAMESPACE = "accelfleet-gate"
STARTUP: dict[str, float] = {}  # figures of the run: the fixture's start-up time


def install_crds(rest: Rest, timeout_s: float = 60.0) -> list[str]:
    """Create every CRD under tests/controlplane/crds and wait until each is Established."""
    names = []
    for path in sorted(CRDS.glob("*/*.yaml")):
        obj = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
        try:
            rest.create("customresourcedefinitions", "", obj)
        except RestError as exc:
            if exc.status != 409:
                raise
        names.append(obj["metadata"]["name"])
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        pending = []
        for name in names:
            crd = rest.get("customresourcedefinitions", "", name) or {}
            conds = (crd.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in conds):
                pending.append(name)
        if not pending:
            return names
        time.sleep(0.1)
    raise AssertionError(f"CRDs not Established after {timeout_s} s: {pending}")


def audit_log(plane: ControlPlane) -> Path:
    """Where `plane` (the run's) writes its audit log: JSON lines, one per request of a
    service account of AUDITED_NAMESPACE."""
    return plane.root / "audit.log"


def audit_args(root: Path) -> list[str]:
    policy = root / "audit-policy.json"
    policy.write_text(json.dumps({
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
        "rules": [{"level": "Metadata",
                   "userGroups": [f"system:serviceaccounts:{AUDITED_NAMESPACE}"]},
                  {"level": "None"}]}), encoding="utf-8")
    return [f"--audit-policy-file={policy}", f"--audit-log-path={root / 'audit.log'}",
            "--audit-log-format=json", "--audit-log-mode=blocking"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if assets() is not None:
        return
    skip = pytest.mark.skip(reason=missing_reason())
    for item in items:
        if item.get_closest_marker("controlplane") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if assets() is None:
        pytest.skip(missing_reason())
    root = tmp_path_factory.mktemp("controlplane")
    plane = ControlPlane(root, controllers=True, apiserver_args=audit_args(root)).start()
    try:
        STARTUP["control_plane_s"] = plane.started_s
        t0 = time.monotonic()
        install_crds(Rest(plane.client()))
        STARTUP["crds_s"] = time.monotonic() - t0
        if os.environ.get("ACCELFLEET_CONTROLPLANE_REPORT"):
            print(f"\ncontrol plane up in {plane.started_s:.1f} s, CRDs in "
                  f"{STARTUP['crds_s']:.1f} s")
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def kube(control_plane: ControlPlane, tmp_path: Path) -> Iterator[RealCluster]:
    """A test's cluster on the run's control plane: a node stand-in of its own; emptied after."""
    with real_cluster(control_plane, tmp_path / "real-cluster") as cluster:
        yield cluster
