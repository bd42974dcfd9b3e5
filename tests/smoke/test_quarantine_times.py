"""Issue 29 item 6 (in part): a quarantine annotation whose time carries no time zone, or is no
time at all, as a hand edit or another tool may leave it, is read as a time unknown: `smoke
status` and `smoke release` say the rest, never exit 3 (a naive time minus an aware one is a
TypeError). The nodes are the recorded real GKE node (tests/smoke/data/nodes)."""

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
