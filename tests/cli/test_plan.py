"""`accelfleet plan` through Typer's CliRunner: exit codes and output."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app

FIXTURE = Path(__file__).parent.parent / "components" / "fixtures" / "Pulumi.gcptest.yaml"
runner = CliRunner()


def test_plan_tree_groups_by_cluster_and_pool() -> None:
    result = runner.invoke(app, ["plan", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"stack gcptest ({FIXTURE.as_posix()}):" in out  # the file read (issue 38)
    assert "c1 (Cluster," in out
    assert "v5p (TpuSlice, 2 resources): ct5p-hightpu-4t 4x4x4 x32 nodes, queued" in out
    assert "tcpx (GpuNodePool, 1 resource): a3-highgpu-8g x2 nodes" in out
    assert "team ml: ~$" in out


def test_plan_json_and_out_file(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    result = runner.invoke(app, ["plan", str(FIXTURE), "--json", "--out", str(target)])
    assert result.exit_code == 0, result.output
    assert f"to {target}" in result.output
    data = json.loads(target.read_text())
    assert data["stack"] == "gcptest"
    assert {p["name"] for p in data["pools"]} >= {"tcpx", "v5p", "v5e-vm"}
    again = runner.invoke(app, ["plan", str(FIXTURE), "--json"])
    assert again.exit_code == 0
    assert again.output == target.read_text()


def test_plan_of_an_invalid_stack_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(FIXTURE.read_text().replace("accelerator: a3-highgpu-8g",
                                               "accelerator: a3-highgpu-9g"))
    result = runner.invoke(app, ["plan", str(bad)])
    assert result.exit_code == 2
    assert "problem" in result.output and "a3-highgpu-9g" in result.output
    assert "Traceback" not in result.output


def test_plan_missing_file_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_plan_help() -> None:
    result = runner.invoke(app, ["plan", "--help"])
    assert result.exit_code == 0
    assert "--json" in result.output and "--out" in result.output
