"""Costs as `fleet validate` and `plan` report them: ranges, price sources, "unpriced" (never
$0), and a budgeted team's unpriced pool refused with exit 2 and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.stack.read import EXAMPLE_STACK

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

runner = CliRunner()
# h100-train as an A3 Ultra (no list price), in us-central1-b: us-central1's zone that has it
ULTRA_OLD = "accelerator: a3-highgpu-8g\n        nodes: 2\n        zone: us-central1-a\n"
ULTRA_NEW = "accelerator: a3-ultragpu-8g\n        nodes: 2\n        zone: us-central1-b\n"


def _stack(tmp_path: Path, old: str, new: str) -> Path:
    text = EXAMPLE_STACK.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "Pulumi.costs.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_validate_json_shows_ranges_sources_and_team_totals() -> None:
    result = runner.invoke(app, ["fleet", "validate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    pools = {p["name"]: p for p in data["pools"]}
    v5p = pools["v5p-slice"]
    assert v5p["monthly_usd"] == round(64 * 4.20 * 730, 2)
    assert v5p["price"]["source"] == "list" and v5p["price"]["as_of"]
    l4 = pools["l4-spot"]  # spot, autoscaling 0..4
    assert l4["min_monthly_usd"] == 0 and l4["max_monthly_usd"] > l4["monthly_usd"] > 0
    teams = {t["name"]: t for t in data["teams"]}
    assert teams["vision"]["max_monthly_usd"] > teams["vision"]["min_monthly_usd"]
    assert teams["research"]["unpriced"] == [] and "platform" in teams


def test_validate_table_shows_the_range_and_the_source() -> None:
    result = runner.invoke(app, ["fleet", "validate"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "0..3,284" in result.output  # l4-spot: 0..4 x g2-standard-24 at spot
    assert "196,224" in result.output and "list" in result.output
    assert "team vision: ~$" in result.output and ".." in result.output  # an estimate: ~


def test_budgeted_team_with_an_unpriced_pool_exits_2_naming_pool_and_fix(tmp_path: Path
                                                                          ) -> None:
    stack = _stack(tmp_path, ULTRA_OLD, ULTRA_NEW)
    result = runner.invoke(app, ["fleet", "validate", str(stack)])
    assert result.exit_code == 2
    assert "pools 'h100-train'" in result.output and "has no price" in result.output
    assert "prices:" in result.output and "monthly_budget_usd" in result.output
    assert "Traceback" not in result.output


def test_unbudgeted_unpriced_pool_says_unpriced_never_zero(tmp_path: Path) -> None:
    stack = _stack(tmp_path, ULTRA_OLD, ULTRA_NEW)
    text = stack.read_text().replace("        monthly_budget_usd: 450000\n", "", 1)
    stack.write_text(text)
    result = runner.invoke(app, ["fleet", "validate", str(stack), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    h100 = next(p for p in data["pools"] if p["name"] == "h100-train")
    assert h100["monthly_usd"] is None and h100["price"]["source"] == "unpriced"
    research = next(t for t in data["teams"] if t["name"] == "research")
    assert research["unpriced"] == ["h100-train"]
    table = runner.invoke(app, ["fleet", "validate", str(stack)], env={"COLUMNS": "250"})
    assert "unpriced" in table.output


def test_stack_rates_win_and_show_as_the_source(tmp_path: Path) -> None:
    stack = _stack(tmp_path, "    smoke:\n", "    prices:\n"
                   "      - {tpu: v5p, usd_per_chip_hour: 2.5, capacity: reservation}\n"
                   "    smoke:\n")
    data = json.loads(runner.invoke(app, ["fleet", "validate", str(stack), "--json"]).output)
    v5p = next(p for p in data["pools"] if p["name"] == "v5p-slice")
    assert v5p["price"]["source"] == "stack rate"
    assert v5p["monthly_usd"] == round(64 * 2.5 * 730, 2)


def test_plan_shows_pool_ranges_sources_and_team_ranges() -> None:
    result = runner.invoke(app, ["plan"])
    assert result.exit_code == 0, result.output
    assert "l4-spot (GpuNodePool, 1 resource): g2-standard-24 x1 nodes, spot, ~$0..$3,284/month" \
        " (list)" in result.output
    assert "team vision: ~$" in result.output and "budget $150,000" in result.output
    data = json.loads(runner.invoke(app, ["plan", "--json"]).output)
    teams = {t["name"]: t for t in data["teams"]}
    assert teams["vision"]["min_monthly_usd"] < teams["vision"]["max_monthly_usd"]
    v5p = next(p for p in data["pools"] if p["name"] == "v5p-slice")
    assert v5p["price"]["source"] == "list" and v5p["monthly_usd"] > 0


def test_validate_shows_the_eks_control_plane_cost_paid_by_the_platform() -> None:
    """EKS bills each control plane per hour ($0.10 in standard support, $0.60 in extended:
    https://aws.amazon.com/eks/pricing/); issue 20 item 9."""
    result = runner.invoke(app, ["fleet", "validate"], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert ("control plane ml-eks: EKS 1.35, standard support until 2027-03-27, $0.10/hour, "
            "~$73/month (platform)") in result.output
    assert "platform (the system pools and the EKS control planes): ~$" in result.output
    data = json.loads(runner.invoke(app, ["fleet", "validate", "--json"]).output)
    (plane,) = data["control_planes"]
    assert (plane["cluster"], plane["support"], plane["usd_per_hour"]) == (
        "ml-eks", "standard", 0.1)
