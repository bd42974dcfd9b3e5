"""Issue 30: creating what may already exist is idempotent. Another run makes the shared
namespace between this run's read and its create (the API answers 409 AlreadyExists, as the
real server does); a create whose answer was lost is retried and finds this run's own object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.smoke.fakekube import ApiError
from tests.smoke.test_cluster_run import _recorded, add_pool_nodes, assert_nothing_left, smoke_run

pytest.importorskip("torch")


def _healthy(cluster: Any) -> list[str]:
    nodes = add_pool_nodes(cluster, "gpu-a", 2)
    for node in nodes:
        cluster.set_node_output(node, _recorded(node, 800.0))
    return nodes


def test_a_namespace_made_by_another_run_meanwhile_is_used(
        fake_cluster: Any, stack: Path, tmp_path: Path, cpu_nodes: None) -> None:
    _healthy(fake_cluster)
    fake_cluster.create("namespaces", "", {"metadata": {"name": "smoke-test"}})

    def not_yet(answer: Any) -> Any:  # our read came before the other run's create
        raise ApiError(404, "NotFound", 'namespaces "smoke-test" not found')

    fake_cluster.lie("GET", "/api/v1/namespaces/smoke-test", not_yet, times=1)
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--timeout-s", "60")
    assert code == 0, output
    assert doc is not None and doc["nodes_tested"] == 2
    posts = [p for m, p in fake_cluster.requests if m == "POST" and p == "/api/v1/namespaces"]
    assert posts == ["/api/v1/namespaces"]  # it was created (409) once, not retried blindly
    assert_nothing_left(fake_cluster, doc["run_id"])


def test_a_configmap_whose_create_answer_was_lost_is_found_as_ours(
        fake_cluster: Any, stack: Path, tmp_path: Path, cpu_nodes: None) -> None:
    _healthy(fake_cluster)

    def lost(answer: Any) -> Any:  # created, but the answer never came back whole
        raise ApiError(503, "ServiceUnavailable", "the server is currently unable to handle "
                       "the request")

    fake_cluster.lie("POST", "/configmaps", lost, times=1)
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--timeout-s", "60")
    assert code == 0, output
    assert doc is not None and doc["nodes_tested"] == 2
    assert_nothing_left(fake_cluster, doc["run_id"])


def test_a_configmap_of_another_run_is_a_conflict_not_ours() -> None:
    """Only this run's own object stands for it: another's (other run label) is refused."""
    from smoke.cluster import launcher

    cr = launcher._ClusterRun.__new__(launcher._ClusterRun)
    cr.run = type("R", (), {"run_id": "r1"})()  # type: ignore[assignment]
    assert cr._ours("Namespace", {"metadata": {}})
    assert cr._ours("ConfigMap", {"metadata": {"labels": {"accelfleet.io/run": "r1"}}})
    assert not cr._ours("ConfigMap", {"metadata": {"labels": {"accelfleet.io/run": "r2"}}})
    assert not cr._ours("ConfigMap", {"metadata": None})
    assert not cr._ours("ConfigMap", "garbage")
