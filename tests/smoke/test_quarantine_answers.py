"""Issue 29 item 6 (in part): what a broken or hostile API server, or a hand edit, leaves on the
nodes `smoke status` and `smoke release` read is validated before use, never exit 3: a
quarantine time without a time zone (or no time) is a time unknown (a naive time minus an aware
one is a TypeError), a listed node without metadata or with fields of the wrong type is no
node, an answer that is not JSON is exit 2. The nodes are the recorded real GKE node
(tests/smoke/data/nodes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smoke.cluster.quarantine import KEY, PREFIX, UNDO
from tests.smoke.nodes import gke_node
from tests.smoke.test_quarantine import TAINT, _cli, stack

__all__ = ["stack"]  # the fixture, used by name


@pytest.mark.parametrize("since", ["2026-11-27T01:00:00", "yesterday", "", "2026-11-27"])
def test_a_time_without_a_zone_is_a_time_unknown(since: str, fake_cluster: Any, stack: Path,
                                                 tmp_path: Path) -> None:
    node = gke_node("gpu-a-node-0", "g2-standard-24", nodepool="gpu-a",
                    labels={KEY: "failed"}, taints=[TAINT])
    node["spec"]["unschedulable"] = True
    undo = {"version": 1, "cordoned": True, "tainted": True, "label": None,
            "annotations": {}, "unit": ["gpu-a-node-0"]}  # as smoke run writes it
    node["metadata"]["annotations"] = {PREFIX + "since": since, PREFIX + "run": "run-1",
                                       PREFIX + "probe": "matmul_tflops_vs_pool",
                                       UNDO: json.dumps(undo, sort_keys=True)}
    fake_cluster.add_node_object(node)
    status = _cli(fake_cluster, tmp_path, "status", str(stack))
    assert status.exit_code == 0, status.output
    assert "gpu-a-node-0" in status.output and "internal error" not in status.output
    released = _cli(fake_cluster, tmp_path, "release", "gpu-a-node-0", "--stack", str(stack))
    assert released.exit_code == 0, released.output
    assert released.output.startswith("RELEASED c1/") and "gpu-a-node-0" in released.output


@pytest.mark.parametrize("item", [
    {"metadata": None}, {"spec": {}}, {"metadata": {"labels": {KEY: "failed"}}},
    {"metadata": {"name": 7, "labels": {KEY: "failed"}}},
    {"metadata": {"name": "n", "labels": {KEY: "failed"}, "annotations": ["x"]}}, "a node"])
def test_a_node_list_item_that_is_no_node_tells_of_no_node(item: object) -> None:
    """A node list whose item lacks its metadata or has fields of the wrong type (a broken or
    hostile API server): the item is skipped, never a KeyError (exit 3)."""
    from smoke.cluster.quarantine import _is_node

    assert not _is_node(item)
    assert _is_node(gke_node("n", "g2-standard-24", nodepool="gpu-a"))


def test_an_answer_that_is_no_json_is_exit_2() -> None:
    from fleet.errors import SetupError
    from smoke.cluster.quarantine import _json

    class Answer:
        data = b"<html>Sign in</html>"

    with pytest.raises(SetupError, match="not JSON") as err:
        _json(Answer())
    assert err.value.exit_code == 2


def test_smoke_status_skips_a_listed_node_without_metadata(fake_cluster: Any, stack: Path,
                                                           tmp_path: Path) -> None:
    """The API lists a node stripped of its metadata beside a real quarantined one: status
    shows the real one (before: KeyError, exit 3)."""
    node = gke_node("gpu-a-node-0", "g2-standard-24", nodepool="gpu-a",
                    labels={KEY: "failed"}, taints=[TAINT])
    fake_cluster.add_node_object(node)

    def strip_one(answer: Any) -> Any:
        if isinstance(answer, dict) and isinstance(answer.get("items"), list):
            answer = {**answer, "items": [*answer["items"], {"kind": "Node", "spec": {}}]}
        return answer

    fake_cluster.lie("GET", "/nodes", strip_one)
    status = _cli(fake_cluster, tmp_path, "status", str(stack))
    assert status.exit_code == 0, status.output
    assert "gpu-a-node-0" in status.output
