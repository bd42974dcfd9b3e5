"""Fixtures of the smoke tests: the fake Kubernetes API server (`tests.smoke.fakekube`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
