"""Fixtures of the smoke tests: the fake Kubernetes API server (`tests.smoke.fakekube`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.smoke.fakekube import FakeCluster


@pytest.fixture
def fake_cluster(tmp_path: Path) -> Iterator[FakeCluster]:
    """A fresh fake cluster on loopback; every process its kubelet started ends with the test."""
    cluster = FakeCluster(tmp_path / "fake-cluster").start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    """The fake GKE stack of two pools of two g2-standard-24 nodes
    (tests.smoke.test_cluster_run.STACK); a test module may define its own."""
    from tests.smoke.test_cluster_run import STACK

    path = tmp_path / "Pulumi.fake.yaml"
    path.write_text(STACK, encoding="utf-8")
    return path


@pytest.fixture
def cpu_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake cluster's nodes are this machine's CPU: judge them as CPUs (no catalog
    expectation), as `accelfleet smoke local` does here."""
    import smoke.expectations
    from smoke.probes.expect import Expectation

    monkeypatch.setattr(smoke.expectations, "for_pool", lambda pool, backend: Expectation())


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.controlplane)])
def cluster(request: pytest.FixtureRequest) -> Any:
    """One scenario, two clusters: the fake API server (`fake_cluster`) and the real control
    plane with its node stand-in (`kube`, tests.controlplane: real kube-apiserver, scheduler,
    Job controller, garbage collector). A test using it calls only the hooks both have
    (tests.controlplane.cluster.RealCluster); hostile answers stay with `fake_cluster`."""
    return request.getfixturevalue("fake_cluster" if request.param == "fake" else "kube")
