"""`components.engine.diff`: two versions of the example stack (one pool added, one resized, one TPU
topology changed), planned offline and diffed; the replacement table's rules; pure helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.engine.diff import diff_plans, diff_values, replacement_table, rule_for
from components.engine.plan import run_plan
from fleet.errors import InputError
from fleet.stack.read import EXAMPLE_STACK

NODE_POOL = "gcp:container/nodePool:NodePool"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"


def example_v2(text: str) -> str:
    """The example with h100-train resized 2 -> 3, v5p-slice 4x4x4 -> 4x4x8 and a new pool."""
    text = text.replace("accelerator: a3-highgpu-8g\n        nodes: 2",
                        "accelerator: a3-highgpu-8g\n        nodes: 3", 1)
    text = text.replace("topology: 4x4x4", "topology: 4x4x8", 1)
    text = text.replace("      # A single-host TPU v6e", (
        "      - name: l4-eval\n        cluster: ml-gke\n        team: vision\n"
        "        accelerator: g2-standard-24\n        nodes: 1\n        zone: us-central1-b\n\n"
        "      # A single-host TPU v6e"), 1)
    import re

    # a budget that holds the doubled slice (the rules check budgets)
    return re.sub(r"(- name: research\n\s+monthly_budget_usd: )\d+", r"\g<1>2000000", text)


def write_v2(tmp_path: Path) -> Path:
    v2 = tmp_path / "Pulumi.example.yaml"  # the same name: the same stack
    v2.write_text(example_v2(EXAMPLE_STACK.read_text()))
    return v2


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    v2 = write_v2(tmp_path_factory.mktemp("v2"))
    return (json.loads(run_plan(EXAMPLE_STACK).to_json()), json.loads(run_plan(v2).to_json()))


def test_example_v2_diff_added_resized_and_replaced(plans: tuple[dict[str, Any],
                                                                 dict[str, Any]]) -> None:
    old, new = plans
    d = diff_plans(old, new, base="main")
    keys = {r.key: r for r in d.resources}
    added = keys[f"{NODE_POOL}::l4-eval-pool"]
    assert added.action == "add" and added.pool == "l4-eval"
    resized = keys[f"{NODE_POOL}::h100-train-pool"]
    assert resized.action == "change" and not resized.replaced
    assert [(f.path, f.old, f.new) for f in resized.fields] == [("nodeCount", 2, 3)]
    slice_ = keys[f"{NODE_POOL}::v5p-slice-pool"]
    assert slice_.replaced and slice_.pool_kind == "TPU slice"
    topo = next(f for f in slice_.fields if f.path == "placementPolicy.tpuTopology")
    assert (topo.old, topo.new) == ("4x4x4", "4x4x8")
    assert topo.replaces is not None and topo.replaces.kind == "no_update_path"
    node_count = next(f for f in slice_.fields if f.path == "nodeCount")
    assert node_count.replaces is None  # resizing alone never replaces
    assert [r.key for r in d.replacements] == [f"{NODE_POOL}::v5p-slice-pool"]
    assert not d.of("remove")
    # cost deltas: each pool's own new minus old, and teams sum them
    pools = {p.name: p for p in d.pools}
    rows_old = {p["name"]: p for p in old["pools"]}
    rows_new = {p["name"]: p for p in new["pools"]}
    h100 = pools["h100-train"]
    assert h100.delta_usd == pytest.approx(
        rows_new["h100-train"]["monthly_usd"] - rows_old["h100-train"]["monthly_usd"], abs=0.01)
    assert h100.delta_usd == pytest.approx(rows_old["h100-train"]["monthly_usd"] / 2, abs=0.02)
    assert pools["l4-eval"].status == "added"
    assert pools["l4-eval"].delta_usd == rows_new["l4-eval"]["monthly_usd"]
    v5p = pools["v5p-slice"]
    if rows_old["v5p-slice"]["monthly_usd"] is not None:
        assert v5p.delta_usd == pytest.approx(rows_old["v5p-slice"]["monthly_usd"], abs=0.02)
    assert pools["l4-spot"].status == "same"
    teams = {t.name: t for t in d.teams}
    research = [p for p in d.pools if p.team == "research" and p.status != "same"]
    if all(p.delta_usd is not None for p in research):
        assert teams["research"].delta_usd == pytest.approx(
            sum(p.delta_usd or 0 for p in research), abs=0.05)
    assert teams["vision"].delta_usd == pytest.approx(pools["l4-eval"].delta_usd or 0, abs=0.05)
    doc = d.to_dict()
    assert doc["summary"]["replaced"] == [f"{NODE_POOL}::v5p-slice-pool"]
    json.dumps(doc)  # JSON-ready


def test_same_plan_is_empty(plans: tuple[dict[str, Any], dict[str, Any]]) -> None:
    old, _ = plans
    d = diff_plans(old, old)
    assert d.empty and d.resources == [] and d.cost_delta_usd == 0


def test_removed_pool_is_destroyed(plans: tuple[dict[str, Any], dict[str, Any]]) -> None:
    old, new = plans
    d = diff_plans(new, old)  # backwards: l4-eval goes away
    assert f"{NODE_POOL}::l4-eval-pool" in [r.key for r in d.destroyed_pools]
    pools = {p.name: p for p in d.pools}
    assert pools["l4-eval"].status == "removed"
    assert pools["l4-eval"].delta_usd == -(pools["l4-eval"].old_usd or 0)


@pytest.mark.parametrize(("type_", "path", "old", "new", "replaces"), [
    (NODE_POOL, "nodeConfig.guestAccelerators[0].count", 8, 4, True),
    (NODE_POOL, "nodeConfig.guestAccelerators[0].gpuDriverInstallationConfig"
     ".gpuDriverVersion", "LATEST", "DEFAULT", True),
    (NODE_POOL, "nodeConfig.serviceAccount", "a@x", "b@x", True),
    (NODE_POOL, "nodeConfig.reservationAffinity.values", ["a"], ["b"], True),
    (NODE_POOL, "nodeConfig.labels.team", "a", "b", False),
    (NODE_POOL, "nodeConfig.machineType", "a3-highgpu-8g", "a3-megagpu-8g", False),
    (NODE_POOL, "nodeCount", 2, 3, False),
    (NODE_POOL, "placementPolicy", None, {"type": "COMPACT"}, True),  # the block appears
    (NODE_POOL, "placementPolicy.type", "COMPACT", "ANY", False),  # nested, not ForceNew
    (NODE_POOL, "placementPolicy.tpuTopology", "4x4x4", "4x4x8", True),
    (NODE_POOL, "nodeConfig.shieldedInstanceConfig", None, {"enableSecureBoot": True}, True),
    (TPU_VM, "acceleratorType", "v5litepod-16", "v5litepod-32", True),
    (TPU_VM, "labels.x", "a", "b", False),
    (NODE_GROUP, "instanceTypes", ["p5.48xlarge"], ["p5e.48xlarge"], True),
    (NODE_GROUP, "amiType", "AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA", True),
    (NODE_GROUP, "subnetIds", ["a"], ["a", "b"], True),
    (NODE_GROUP, "scalingConfig.desiredSize", 2, 3, False),
    (NODE_GROUP, "labels.x", "a", "b", False),
    ("aws:ec2/vpc:Vpc", "cidrBlock", "10.0.0.0/16", "10.1.0.0/16", True),  # issue 27
    ("aws:ec2/subnet:Subnet", "cidrBlock", "10.0.0.0/19", "10.0.32.0/19", True),  # issue 27
    ("aws:kms/key:Key", "description", "a", "b", False),  # not in the table (unread)
])
def test_rules(type_: str, path: str, old: Any, new: Any, replaces: bool) -> None:
    assert (rule_for(type_, path, old, new) is not None) is replaces


def test_table_has_sources_and_terraform_names() -> None:
    table = replacement_table()
    assert {NODE_POOL, TPU_VM, NODE_GROUP} <= set(table)  # and more (issue 27, class 3)
    for rules in table.values():
        assert rules
        for rule in rules:
            assert "@" in rule.source and rule.terraform
            assert rule.kind != "no_update_path" or rule.why


def test_diff_values_paths() -> None:
    old = {"a": {"b": 1, "l": [{"x": 1}, {"x": 2}]}, "gone": 1, "s": [1, 2]}
    new = {"a": {"b": 2, "l": [{"x": 1}, {"x": 3}]}, "s": [1, 2, 3], "new": "v"}
    assert diff_values(old, new) == [
        ("a.b", 1, 2), ("a.l[1].x", 2, 3), ("gone", 1, None), ("new", None, "v"),
        ("s", [1, 2], [1, 2, 3])]


def test_computed_on_both_sides_is_no_change() -> None:
    r = {"type": NODE_POOL, "name": "p", "custom": True, "parent": None, "provider": None,
         "inputs": {"nodeConfig": {"serviceAccount": "<computed>"}}}
    assert diff_plans({"resources": [r]}, {"resources": [r]}).resources == []


def test_unpriced_pool_makes_the_delta_unknown() -> None:
    old = {"resources": [], "pools": [{"name": "a", "team": "t", "nodes": 1,
                                       "monthly_usd": None}],
           "teams": [{"name": "t", "monthly_usd": 0}]}
    new = {"resources": [], "pools": [{"name": "a", "team": "t", "nodes": 2,
                                       "monthly_usd": None}],
           "teams": [{"name": "t", "monthly_usd": "n/a"}]}  # read defensively
    d = diff_plans(old, new)
    assert d.pools[0].delta_usd is None and d.pools[0].status == "changed"
    assert d.cost_delta_usd is None


def test_not_a_plan_is_input_error() -> None:
    with pytest.raises(InputError, match="not an `accelfleet plan --json`"):
        diff_plans({"resources": "nope"}, {"resources": []})
