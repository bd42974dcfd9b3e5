"""Item 5 (part): the plan diff says "new", not "unpriced", for an added pool, counts the
replacements in its verdict line, and checks `--base-ref` before the (seconds-long) plan."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli.plan_diff import render_text
from components.engine.diff import diff_plans
from tests.hostile.conftest import BASE_STACK, invoke


def _plan(pools: list[dict[str, object]], machine: str = "ml-gke") -> dict[str, object]:
    return {"stack": "s", "resources": [
        {"type": "gcp:container/nodePool:NodePool", "name": "gke-h100", "custom": True,
         "inputs": {"cluster": machine}}], "pools": pools,
        "teams": [{"name": "research", "monthly_usd": 10.0}]}


def test_an_added_pool_is_new_and_replacements_are_counted() -> None:
    old = _plan([])
    new = _plan([{"name": "h100", "team": "research", "nodes": 2, "monthly_usd": 100.0}],
                machine="other-cluster")
    text = render_text(diff_plans(old, new, base="base.json"))
    assert "h100 (research): added, nodes – -> 2, new -> $100/month (+$100)" in text
    assert "unpriced" not in text
    assert "1 replacement destroying nodes" in text.splitlines()[0]


def test_a_bad_base_ref_is_refused_before_the_plan(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    stack = tmp_path / "Pulumi.s.yaml"
    stack.write_text(BASE_STACK, encoding="utf-8")

    def no_plan(*args: object, **kwargs: object) -> None:
        raise AssertionError("planned before checking the ref")

    monkeypatch.setattr("components.engine.plan.run_plan", no_plan)
    code, out = invoke("plan", str(stack), "--base-ref", "origin/nope")
    assert code == 2, out
    assert "unknown git ref 'origin/nope'" in out


def test_a_list_change_is_shown_element_by_element() -> None:
    flavors = [{"name": f"flavor-{i}", "nodeLabels": {"accelfleet.io/pool": f"pool-{i}"}}
               for i in range(3)]

    def plan(items: list[dict[str, object]]) -> dict[str, object]:
        return {"stack": "s", "pools": [], "teams": [], "resources": [
            {"type": "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue", "name": "q",
             "custom": True, "inputs": {"spec": {"flavors": items}}}]}

    text = render_text(diff_plans(plan(flavors), plan([*flavors, {"name": "flavor-new"}]),
                                  base="b"))
    assert 'spec.flavors[3]: (none) -> {"name": "flavor-new"}' in text


def test_a_missing_pulumi_cli_is_said_before_the_plan(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import cli.up as up_cli

    def no_plan(*args: object, **kwargs: object) -> None:
        raise AssertionError("planned before checking the Pulumi CLI")

    monkeypatch.setattr(up_cli, "engine_factory", None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `pulumi` anywhere on it
    monkeypatch.setattr("components.engine.plan.run_plan", no_plan)
    for args in (("preview",), ("up", "--yes")):
        code, out = invoke(*args)
        assert code == 2 and "Pulumi CLI is not on PATH" in out, out
