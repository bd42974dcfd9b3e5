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
