"""Issue 38: `smoke status` on a quarantined node whose `spec.taints` is a string exited 3
(each character read as a taint). A node's taints are read through one reader
(smoke.cluster.nodeapi.taints_of) by status, release and quarantine: what is malformed is
left out and said, never an internal error. The API answers are hostile ones (a real API
server never stores them), served by the fake API server; the node is the recorded GKE one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smoke.cluster.nodeapi import taints_of
from smoke.cluster.quarantine import KEY, PREFIX, UNDO
from tests.smoke.nodes import gke_node
from tests.smoke.test_quarantine import TAINT, _cli, stack

__all__ = ["stack"]  # the fixture, used by name

MALFORMED = ["NoSchedule", TAINT, [TAINT, "x", 7], 0]


@pytest.mark.parametrize("taints", MALFORMED, ids=["string", "object", "mixed-list", "number"])
def test_status_and_release_of_a_node_with_malformed_taints_exit_cleanly(
        taints: Any, fake_cluster: Any, stack: Path, tmp_path: Path) -> None:
    node = gke_node("gpu-a-node-0", "g2-standard-24", nodepool="gpu-a",
                    labels={KEY: "failed"}, taints=[TAINT])
    node["spec"]["unschedulable"] = True
    undo = {"version": 1, "cordoned": True, "tainted": True, "label": None,
            "annotations": {}, "unit": ["gpu-a-node-0"]}
    node["metadata"]["annotations"] = {PREFIX + "since": "2026-11-27T01:00:00+00:00",
                                       PREFIX + "run": "run-1", PREFIX + "reason": 42,
                                       UNDO: json.dumps(undo, sort_keys=True)}
    fake_cluster.add_node_object(node)

    def malform(answer: Any) -> Any:
        items = answer.get("items") if isinstance(answer, dict) else None
        if isinstance(items, list):
            return {**answer, "items": [{**i, "spec": {**i.get("spec", {}), "taints": taints}}
                                        for i in items]}
        if isinstance(answer, dict) and answer.get("kind") == "Node":
            return {**answer, "spec": {**answer.get("spec", {}), "taints": taints}}
        return answer

    fake_cluster.lie("GET", "/nodes", malform)
    status = _cli(fake_cluster, tmp_path, "status", str(stack))
    assert status.exit_code == 0, status.output
    assert "gpu-a-node-0" in status.output and "internal error" not in status.output
    if not isinstance(taints, list) or len(taints) != 3:
        assert "malformed" in status.output, status.output
    as_json = _cli(fake_cluster, tmp_path, "status", str(stack), "--json")
    assert as_json.exit_code == 0, as_json.output
    released = _cli(fake_cluster, tmp_path, "release", "gpu-a-node-0", "--stack", str(stack))
    assert released.exit_code in (0, 2), released.output
    assert "internal error" not in released.output and "Traceback" not in released.output


@pytest.mark.parametrize(("node", "kept", "problem"), [
    ({}, [], ""),
    ({"spec": {}}, [], ""),
    ({"spec": {"taints": None}}, [], ""),
    ({"spec": {"taints": [TAINT]}}, [TAINT], ""),
    ({"spec": {"taints": "NoSchedule"}}, [], "spec.taints is str, not a list"),
    ({"spec": {"taints": [TAINT, "x"]}}, [TAINT], "1 entry of spec.taints not an object"),
    ({"spec": ["x"]}, [], "spec is list, not an object"),
])
def test_taints_of_keeps_what_is_well_formed_and_says_what_is_not(
        node: dict[str, Any], kept: list[Any], problem: str) -> None:
    got, why = taints_of(node)
    assert got == kept
    assert why.startswith(problem) if problem else why == ""
