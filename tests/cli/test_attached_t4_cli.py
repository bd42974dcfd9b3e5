"""`accelfleet fleet validate` on a stack with GKE pools of T4 attached to N1 machines (issue 20
item 15): accepted (exit 0), each shown as the N1 machine with its T4 count, and unpriced with
the reason rather than priced at zero (the catalog has the N1 part's price, not the T4's)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()

STACK = """config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-ml-prod, region: us-central1}
    clusters:
      - {name: gke, cloud: gcp, authorized_cidrs: [198.51.100.0/24]}
    teams:
      - {name: serving}
    pools:
      - {name: t4-serve, cluster: gke, team: serving, accelerator: nvidia-tesla-t4, nodes: 3,
         zones: [us-central1-a, us-central1-b, us-central1-c]}
      - {name: t4-quad, cluster: gke, team: serving, accelerator: n1-standard-32-t4x4,
         nodes: 1, zone: us-central1-b, capacity: spot}
"""


def _stack(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.t4.yaml"
    path.write_text(STACK, encoding="utf-8")
    return path


def test_validate_accepts_t4_pools_on_n1_machines(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fleet", "validate", str(_stack(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    pools = {p["name"]: p for p in json.loads(result.output)["pools"]}
    assert set(pools) == {"t4-serve", "t4-quad"}
    assert pools["t4-serve"]["machine_type"] == "n1-standard-8-t4x1"  # `nvidia-tesla-t4`
    assert (pools["t4-quad"]["machine_type"], pools["t4-quad"]["devices"]) == (
        "n1-standard-32-t4x4", 4)
    for pool in pools.values():
        assert pool["monthly_usd"] is None and pool["price"]["source"] == "unpriced"
        assert "T4 part was not read" in pool["price"]["detail"]


def test_validate_table_names_the_t4_pools(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fleet", "validate", str(_stack(tmp_path))],
                           env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "t4-serve" in result.output and "t4-quad" in result.output


def test_t4_on_a_gke_cluster_is_the_n1_row(tmp_path: Path) -> None:
    path = _stack(tmp_path)
    path.write_text(STACK.replace("accelerator: nvidia-tesla-t4", "accelerator: t4"),
                    encoding="utf-8")
    result = runner.invoke(app, ["fleet", "validate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    pools = {p["name"]: p for p in json.loads(result.output)["pools"]}
    assert pools["t4-serve"]["machine_type"] == "n1-standard-8-t4x1"
