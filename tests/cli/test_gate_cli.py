"""`fleet validate` and `plan` show each pool's gate (issue 26 item 1, docs/gate.md): a line per
pool in words, the gate in `--json`, and the plan's controller and taints."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "stacks" / "Pulumi.example.yaml")
runner = CliRunner()


def test_validate_shows_each_pools_gate(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fleet", "validate", EXAMPLE])
    assert result.exit_code == 0, result.output
    # pools that share a gate share a line, in the stack's order
    assert "gate T0-T2 + fabric, re-proof every 24h, quarantine at most 10%: h100-train, " \
        "p5-train" in result.output
    assert "gate T0-T2, re-proof every 24h, quarantine at most 10%: l4-spot, v5p-slice, " \
        "v6e-serve, g6-ci" in result.output
    data = json.loads(runner.invoke(app, ["fleet", "validate", EXAMPLE, "--json"]).output)
    gates = {p["name"]: p["gate"] for p in data["pools"]}
    assert gates["p5-train"] == {"enabled": True, "reason": None, "max_tier": 2,
                                 "fabric": True, "reprove_interval_s": 86_400,
                                 "max_quarantine": "10%", "mode": "enforce",
                                 "max_unavailable": "10%", "on_fail": "keep"}
    opted = tmp_path / "Pulumi.opted.yaml"
    opted.write_text(Path(EXAMPLE).read_text().replace(
        "        capacity: spot\n",
        "        capacity: spot\n        gate: {enabled: false, reason: \"spot churn\"}\n", 1))
    result = runner.invoke(app, ["fleet", "validate", str(opted)])
    assert result.exit_code == 0, result.output
    assert "gate off (spot churn): l4-spot" in result.output
    # issue 35: shadow mode and on_fail in words (a folder of its own: two stack files side
    # by side deploying one project's names are refused, issue 36)
    (tmp_path / "shadow").mkdir()
    shadow = tmp_path / "shadow" / "Pulumi.shadow.yaml"
    shadow.write_text(Path(EXAMPLE).read_text().replace(
        "        capacity: spot\n",
        "        capacity: spot\n        gate: {mode: shadow}\n", 1), encoding="utf-8")
    result = runner.invoke(app, ["fleet", "validate", str(shadow)])
    assert result.exit_code == 0, result.output
    assert "gate shadow T0-T2, re-proof every 24h, reported only: l4-spot" in result.output


def test_a_bad_gate_exits_2_with_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(Path(EXAMPLE).read_text().replace(
        "        driver: latest\n",
        "        driver: latest\n        gate: {reprove_interval: 2w}\n", 1))
    result = runner.invoke(app, ["fleet", "validate", str(bad)])
    assert result.exit_code == 2, result.output
    assert "reprove_interval" in result.output and "24h" in result.output


def test_plan_shows_the_gates_and_the_controllers() -> None:
    result = runner.invoke(app, ["plan", EXAMPLE])
    assert result.exit_code == 0, result.output
    # 8, and per cluster a Role and RoleBinding in each team namespace re-proofs go through
    # (research, vision), the re-proofs' Kueue WorkloadPriorityClass, the controller's
    # PriorityClass and its PodDisruptionBudget (issue 35)
    assert "ml-gke-gate (GateController, 17 resources)" in result.output
    assert "ml-eks-gate (GateController, 17 resources)" in result.output
    assert result.output.count("1 x kubernetes WorkloadPriorityClass") == 2
    assert "gate T0-T2 + fabric, re-proof every 24h, quarantine at most 10%: h100-train, " \
        "p5-train" in result.output
