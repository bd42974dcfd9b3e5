"""`components.engine.diff`: two versions of the example stack (one pool added, one resized, one TPU
topology changed), planned offline and diffed; the replacement table's rules; pure helpers."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from components.engine.diff import diff_plans, diff_values, replacement_table, rule_for
from components.engine.plan import run_plan
from fleet.errors import InputError
from fleet.stack.read import EXAMPLE_STACK
from tests.plans import planned

NODE_POOL = "gcp:container/nodePool:NodePool"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
EKS = "aws:eks/cluster:Cluster"
BOOTSTRAP = "accessConfig.bootstrapClusterCreatorAdminPermissions"


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
    return (json.loads(planned(EXAMPLE_STACK).to_json()), json.loads(run_plan(v2).to_json()))


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
    assert [r.key for r in d.node_replacements] == [f"{NODE_POOL}::v5p-slice-pool"]
    # nothing else: the gate's inventory ConfigMap, whose data lists the pools, is updated in
    # place (its provider sets enableConfigMapMutable; it was replaced before)
    assert [r.key for r in d.replacements if not r.destroys_nodes] == []
    cm = next(c for c in d.resources if c.type == "kubernetes:core/v1:ConfigMap"
              and c.name.endswith("-gate-configmap"))
    assert cm.action == "change" and not cm.replaced
    assert [f.path for f in cm.fields] == ["data.inventory.json"]
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
    assert doc["summary"]["replaced"] == sorted(r.key for r in d.replacements)
    assert f"{NODE_POOL}::v5p-slice-pool" in doc["summary"]["replaced"]
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
    ("aws:kms/key:Key", "description", "a", "b", False),  # updated in place
    ("aws:kms/key:Key", "keyUsage", "ENCRYPT_DECRYPT", "SIGN_VERIFY", True),
])
def test_rules(type_: str, path: str, old: Any, new: Any, replaces: bool) -> None:
    assert (rule_for(type_, path, old, new) is not None) is replaces


def test_table_has_sources_and_terraform_names() -> None:
    table = replacement_table()
    assert {NODE_POOL, TPU_VM, NODE_GROUP} <= set(table)  # and more (issue 27, class 3)
    for type_, rules in table.items():
        # read, and nothing in it is ForceNew (vpc_id is updated by detach + attach)
        assert rules or type_ == "aws:ec2/internetGateway:InternetGateway", type_
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


def _with_bootstrap(plan: dict[str, Any], flag: bool) -> dict[str, Any]:
    """`plan` as if its EKS clusters had been created with the bootstrap flag `flag`."""
    out = copy.deepcopy(plan)
    for r in out["resources"]:
        if r["type"] == EKS:
            r["inputs"]["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] = flag
    return out


def test_a_field_the_component_ignores_is_no_replacement(
        plans: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Issue 27 item 3: the EKS cluster ignores its bootstrap flag (components/aws/_eks.py), a
    ForceNew field; a cluster created with it true is not replaced now that it is false."""
    _, new = plans
    eks = [r for r in new["resources"] if r["type"] == EKS]
    assert eks and all(r["ignore_changes"] == [BOOTSTRAP] for r in eks)  # the plan records it
    old = _with_bootstrap(new, True)
    assert not any(r["inputs"]["accessConfig"]["bootstrapClusterCreatorAdminPermissions"]
                   for r in new["resources"] if r["type"] == EKS)
    d = diff_plans(old, new)
    changed = [r for r in d.resources if r.type == EKS]
    assert changed and not any(r.replaced for r in changed)
    for r in changed:
        [f] = r.fields
        assert f.path == BOOTSTRAP and f.replaces is None
        assert f.ignored is not None and f.ignored.path == BOOTSTRAP
    assert d.replacements == []
    # without the option, the same change replaces the cluster (the rule is the provider's)
    bare = copy.deepcopy(new)
    for r in bare["resources"]:
        r.pop("ignore_changes", None)
    assert [r.type for r in diff_plans(old, bare).replacements] == [EKS] * len(changed)


def test_a_plan_saved_before_options_were_recorded_uses_the_table(
        plans: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, new = plans
    legacy = copy.deepcopy(new)
    legacy.pop("resource_options")
    for r in legacy["resources"]:
        r.pop("ignore_changes", None)
        r.pop("replace_on_changes", None)
    d = diff_plans(_with_bootstrap(legacy, True), legacy)
    [f] = next(r for r in d.resources if r.type == EKS).fields
    assert f.replaces is None and f.ignored is not None
    assert "components/aws/_eks.py" in f.ignored.source
    assert "replacements.yaml" in f.ignored.source


def test_a_recorded_replace_on_changes_replaces(
        plans: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The TPU slice marks placementPolicy replace_on_changes: a change under it that the
    provider would update in place (placementPolicy.type) still replaces the slice."""
    _, new = plans
    slice_ = next(r for r in new["resources"] if r["type"] == NODE_POOL
                  and r["name"] == "v5p-slice-pool")
    assert slice_["replace_on_changes"] == ["placementPolicy"]
    old = copy.deepcopy(new)
    o = next(r for r in old["resources"] if r["type"] == NODE_POOL
             and r["name"] == "v5p-slice-pool")
    o["inputs"]["placementPolicy"]["type"] = "ANY"
    [r] = diff_plans(old, new).replacements
    [f] = r.fields
    assert f.path == "placementPolicy.type"
    assert f.replaces is not None and f.replaces.kind == "replace_on_changes"


def test_a_mutable_configmap_provider_makes_a_data_change_an_update() -> None:
    """pulumi-kubernetes replaces a ConfigMap on a data change unless its provider sets
    enableConfigMapMutable (provider/pkg/provider/diff.go)."""
    def plan(data: str, mutable: str | None) -> dict[str, Any]:
        provider = {"type": "pulumi:providers:kubernetes", "name": "k", "custom": True,
                    "parent": None, "provider": None, "inputs": {"kubeconfig": "<computed>"}}
        if mutable is not None:
            provider["inputs"]["enableConfigMapMutable"] = mutable
        return {"resource_options": True, "resources": [provider, {
            "type": "kubernetes:core/v1:ConfigMap", "name": "cm", "custom": True,
            "parent": None, "provider": "pulumi:providers:kubernetes::k",
            "inputs": {"metadata": {"name": "cm"}, "data": {"x": data}}}]}

    assert diff_plans(plan("1", None), plan("2", None)).replacements
    assert not diff_plans(plan("1", "true"), plan("2", "true")).replacements


def test_a_replaced_provider_replaces_what_it_manages(
        plans: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """pulumi-aws marks the provider's region ForcesProviderReplace (provider/resources.go):
    a new region replaces the provider, and Pulumi every AWS resource under it."""
    _, new = plans
    moved = copy.deepcopy(new)
    aws = [r for r in moved["resources"] if r["type"] == "pulumi:providers:aws"]
    assert aws
    for r in aws:
        r["inputs"]["region"] = "us-west-2"
    keys = {f"{r['type']}::{r['name']}" for r in aws}
    managed = {f"{r['type']}::{r['name']}" for r in moved["resources"]
               if r.get("provider") in keys and r["custom"]}
    assert managed
    d = diff_plans(new, moved)
    replaced = {r.key for r in d.replacements}
    assert keys | managed <= replaced
    assert all(r.type.startswith("aws:") or r.key in keys for r in d.replacements)
    node_group = next(r for r in d.replacements if r.type == NODE_GROUP)
    assert node_group.destroys_nodes and node_group.pool is not None
    [f] = node_group.fields
    assert f.path == "(provider)" and f.replaces is not None \
        and f.replaces.kind == "provider_replaced"
