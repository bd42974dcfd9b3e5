"""`accelfleet queue show` through Typer's CliRunner: text, --team, --json, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.stack.read import EXAMPLE_STACK
from tests.stacks import ONE_GKE_CLUSTER

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

runner = CliRunner()


def test_show_lists_every_teams_queue_with_flavors_in_order() -> None:
    result = runner.invoke(app, ["queue", "show"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "ml-gke: cohort ml-gke, 4 flavors (one per pool)" in out
    assert "ml-eks: cohort ml-eks, 2 flavors (one per pool)" in out
    assert ("team vision: namespace vision, LocalQueue vision -> ClusterQueue vision "
            "(its routing)") in out
    assert ("quota: nvidia.com/gpu 8, google.com/tpu 4, cpu 272170m, memory 1075971Mi, "
            "ephemeral-storage 900Gi") in out
    vision = out[out.index("team vision"):]
    assert vision.index("1. v6e-serve") < vision.index("2. l4-spot")
    assert "3. l4-spot (borrowed from vision while idle, up to nvidia.com/gpu 4, cpu 46564m, " \
           "memory 180402Mi, ephemeral-storage 360Gi)" in out
    assert "(its own pools, default order)" in out  # ml-eks has no routing entry


def test_show_one_team_as_json() -> None:
    result = runner.invoke(app, ["queue", "show", str(EXAMPLE_STACK), "--team", "vision",
                                 "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [c["cluster"] for c in data["clusters"]] == ["ml-gke", "ml-eks"]
    for cluster in data["clusters"]:
        assert [q["team"] for q in cluster["queues"]] == ["vision"]
    [gke] = data["clusters"][0]["queues"]
    assert (gke["namespace"], gke["local_queue"], gke["cluster_queue"]) == ("vision",) * 3
    assert [f["name"] for f in gke["flavors"]] == ["v6e-serve", "l4-spot"]
    assert gke["flavors"][0]["nominal"]["google.com/tpu"] == "4"
    assert gke["routed"] is True


def test_unknown_team_exits_2_with_a_did_you_mean() -> None:
    result = runner.invoke(app, ["queue", "show", "--team", "visoin"])
    assert result.exit_code == 2
    assert "no queue of team 'visoin'" in result.output and "did you mean 'vision'" in \
        result.output
    assert "Traceback" not in result.output


def test_an_invalid_routing_exits_2_naming_the_entry(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(EXAMPLE_STACK.read_text().replace("prefer: [v6e-serve, l4-spot]",
                                                     "prefer: [v6e-serv, l4-spot]"))
    for args in (["queue", "show", str(bad)], ["fleet", "validate", str(bad)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "routing.teams[0].prefer[0]" in result.output
        assert "did you mean 'v6e-serve'" in result.output


def test_help() -> None:
    result = runner.invoke(app, ["queue", "show", "--help"])
    assert result.exit_code == 0
    assert "--team" in result.output and "--json" in result.output


QUEUED_STACK = ONE_GKE_CLUSTER + """\
    pools:
      - {name: h100-q, cluster: c1, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a, capacity: queued}
      - {name: l4, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 1,
         zone: us-central1-a}
"""


def test_show_says_which_flavors_get_nodes_by_provisioning_request(tmp_path: Path) -> None:
    """Issue 20 item 2: a queued pool's nodes come only through Kueue's ProvisioningRequest
    admission check; the queues say so, and name the queue smoke runs use."""
    stack = tmp_path / "Pulumi.q.yaml"
    stack.write_text(QUEUED_STACK, encoding="utf-8")
    result = runner.invoke(app, ["queue", "show", str(stack)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    # quotas count what pods can get: 2 x the recorded a3-highgpu-8g Allocatable (cpu 207410m,
    # memory 1885812064Ki), the L4 node by GKE's reservations (issue 20 item 13), each less
    # its DaemonSets' requests (issue 27)
    h100 = ("nvidia.com/gpu 16, cpu 413044m, memory 3682374Mi, ephemeral-storage 360Gi; nodes "
            "by ProvisioningRequest")
    assert ("team research: namespace research, LocalQueue research -> ClusterQueue research "
            "(its own pools, default order) quota: nvidia.com/gpu 18, cpu 436326m, memory "
            "3772575Mi, ephemeral-storage 540Gi 1. l4 (nvidia.com/gpu 2, cpu 23282m, memory "
            f"90201Mi, ephemeral-storage 180Gi) 2. h100-q ({h100})") in text
    assert ("smoke runs: namespace accelfleet-smoke, LocalQueue accelfleet-smoke -> "
            "ClusterQueue accelfleet-smoke (the queued pools, borrowed in the cohort) quota: "
            f"nothing 1. h100-q (borrowed from research while idle, up to {h100})") in text
    plan = runner.invoke(app, ["plan", str(stack)], env={"COLUMNS": "300"})
    assert plan.exit_code == 0, plan.output
    assert ("queue c1/accelfleet-smoke (smoke runs, namespace accelfleet-smoke; borrows in "
            f"cohort c1): h100-q (borrowed from research while idle, up to {h100})"
            ) in " ".join(plan.output.split())
