"""A run in which nothing was tested is no pass (issue 19 item 9): every pool skipped (scaled to
zero here) exits 1 and says so, in the output, the run document and the HTML headline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from smoke.cluster.run import NodeOutcome, PoolReport, PoolStatus, RunReport
from tests.smoke.test_cluster_run import HEAD

pytest.importorskip("torch")

ZERO = HEAD + """\
      - {name: gpu-a, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 0,
         zone: us-central1-a}
"""


def test_every_pool_skipped_exits_1_naming_why(fake_cluster: Any, tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.zero.yaml"
    stack.write_text(ZERO, encoding="utf-8")
    kc = fake_cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["smoke", "run", str(stack), "--kubeconfig", str(kc),
                                      "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert "nothing was tested" in result.output
    assert "gpu-a: no node to test" in result.output
    doc = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert doc["ok"] is False and doc["nodes_tested"] == 0
    junit = (out / "junit.xml").read_text(encoding="utf-8")
    assert "<failure" in junit and "nothing was tested" in junit


def test_a_run_whose_every_result_is_skipped_is_not_a_pass() -> None:
    from smoke.probes.results import HostReport, ProbeResult, Verdict
    from smoke.reports.html import context

    rep = HostReport("n0", "torch", "gpu", {}, 3, (ProbeResult(
        "host", "allreduce_busbw", 3, Verdict.SKIPPED, "1 device"),))
    run = RunReport("r", "s", "", 0.0, "v", "", pools=(PoolReport(
        "p", "c", "l4", "w", 1, PoolStatus.DONE, nodes=(NodeOutcome(0, "pod", "n0", rep),)),))
    assert not run.ok and run.nothing_tested
    assert context(run)["headline"] == "FAILED: nothing was tested"


def test_every_live_node_is_tested_and_the_untested_named(fake_cluster: Any,
                                                          tmp_path: Path) -> None:
    """The stack declares 2 nodes; the pool has 3 schedulable nodes and a cordoned one: all 3
    are tested, the cordoned one is named (issue 19 item 9)."""
    from tests.smoke.test_cluster_run import STACK, _recorded, add_pool_nodes, smoke_run

    stack = tmp_path / "Pulumi.fake.yaml"
    stack.write_text(STACK, encoding="utf-8")
    nodes = add_pool_nodes(fake_cluster, "gpu-a", 4)
    fake_cluster.patch("nodes", "", nodes[3], {"spec": {"unschedulable": True}})
    fake_cluster.set_node_output("*", "")
    for node in nodes[:3]:
        fake_cluster.set_node_output(node, _recorded(node, 800.0))
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--tier", "2")
    assert doc is not None, output
    pool = next(p for p in doc["pools"] if p["name"] == "gpu-a")
    assert sorted(n["node"] for n in pool["nodes"]) == nodes[:3]
    named = {c["node"]: c["result"] for c in pool["checks"]}
    assert named[nodes[3]]["verdict"] == "skipped" and "cordoned" in named[nodes[3]]["reason"]
    assert "3 testable node(s) live, 2 declared" in named[None]["reason"]
    assert code == 0, output
