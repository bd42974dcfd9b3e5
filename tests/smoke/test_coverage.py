"""Issue 30: a run never passes a node it did not judge, and nothing it measured is lost.

The fake API server gets one lying rule in front of it (`FakeCluster.lie`): its answers are
evidence the launcher checks, not truth. Every node of the pool needs exactly one judged
report from a pod that ran on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.smoke.test_cluster_run import (
    _recorded,
    add_pool_nodes,
    assert_nothing_left,
    smoke_run,
)

pytest.importorskip("torch")


def _pods_all_on(node: str) -> Any:
    """The pod list's lie: every pod of the run ran on `node`."""
    def rule(answer: Any) -> Any:
        for pod in (answer.get("items") or []) if isinstance(answer, dict) else []:
            if (pod.get("spec") or {}).get("nodeName"):
                pod["spec"]["nodeName"] = node
        return answer
    return rule


def test_two_pods_said_to_run_on_one_node_fail_and_the_other_node_is_named(
        fake_cluster: Any, stack: Path, tmp_path: Path, cpu_nodes: None) -> None:
    nodes = add_pool_nodes(fake_cluster, "gpu-a", 2)
    for node in nodes:  # both logs report node-0, as the lying list says
        fake_cluster.set_node_output(node, _recorded(nodes[0], 800.0))
    fake_cluster.lie("GET", "/namespaces/smoke-test/pods", _pods_all_on(nodes[0]))
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--timeout-s", "60")
    assert code == 1, output
    assert doc is not None and not doc["ok"]
    pool = next(p for p in doc["pools"] if p["name"] == "gpu-a")
    checks = {(c["node"], c["result"]["details"].get("coverage")): c["result"]
              for c in pool["checks"]}
    assert checks[(nodes[0], "duplicate")]["verdict"] == "fail"
    assert checks[(nodes[1], "untested")]["verdict"] == "fail"
    assert "not tested" in checks[(nodes[1], "untested")]["reason"]
    assert doc["nodes_tested"] == 1
    assert any(nodes[1] in f for f in doc["failures"]), doc["failures"]
    assert_nothing_left(fake_cluster, doc["run_id"])


def test_a_report_from_a_node_outside_the_pool_fails_naming_it(
        fake_cluster: Any, stack: Path, tmp_path: Path, cpu_nodes: None) -> None:
    nodes = add_pool_nodes(fake_cluster, "gpu-a", 2)
    stranger = "gke-other-pool-node"
    for node in nodes:
        fake_cluster.set_node_output(node, _recorded(node, 800.0))

    def rule(answer: Any) -> Any:  # node-1's pod is said to run on a node of no pool
        for pod in (answer.get("items") or []) if isinstance(answer, dict) else []:
            if (pod.get("spec") or {}).get("nodeName") == nodes[1]:
                pod["spec"]["nodeName"] = stranger
        return answer

    fake_cluster.lie("GET", "/namespaces/smoke-test/pods", rule)
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--timeout-s", "60")
    assert code == 1, output
    assert doc is not None
    pool = next(p for p in doc["pools"] if p["name"] == "gpu-a")
    rules = {(c["node"], c["result"]["details"].get("coverage")) for c in pool["checks"]}
    assert (stranger, "outside") in rules and (nodes[1], "untested") in rules
    assert_nothing_left(fake_cluster, doc["run_id"])


def test_coverage_rules_on_their_own() -> None:
    from smoke.cluster._rejudge import coverage
    from smoke.cluster.run import NodeOutcome
    from smoke.probes.results import HostReport

    def outcome(pod: str, node: str | None) -> NodeOutcome:
        return NodeOutcome(0, pod, node, report=HostReport.from_dict(
            json.loads(_recorded(node or "x", 800.0))))

    healthy = [outcome("p0", "n0"), outcome("p1", "n1")]
    assert coverage(healthy, ("n0", "n1")) == []
    assert coverage(healthy, None) == []
    no_node = coverage([outcome("p0", None)], None)
    assert [c.result.details["coverage"] for c in no_node] == ["no-node"]
    # a pool whose nodes are unknown before the run still refuses two pods on one node
    twice = coverage([outcome("p0", "n0"), outcome("p1", "n0")], None)
    assert [(c.node, c.result.details["coverage"]) for c in twice] == [("n0", "duplicate")]
    # a TPU slice's pods need not cover every listed node, but must land on one of them
    assert coverage(healthy[:1], ("n0", "n1"), every_target=False) == []
