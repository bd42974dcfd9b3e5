"""Issue 36, class 4: `plan --diff` names every change that destroys or rolls nodes, with the
count of nodes and whether the gate proves the new ones; nothing that holds no node is called
a pool's destruction.

EKS: a change that lands in a node group's launch template is a new template version, and a
node group version or launch template version change is a managed node group update, which
replaces every node (https://docs.aws.amazon.com/eks/latest/userguide/
managed-node-update-behavior.html, read 2026-11-28; replacements.yaml `rolls`). GKE: a tpu7x
slice's topology is in its workload policy's name, so a topology change replaces the slice.

The issue's instances are named as such; the others are this file's own."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.plan_diff import render_text
from components.engine.diff import PlanDiff, diff_plans, roll_for, roll_table
from components.engine.plan import run_plan

EKS: dict[str, Any] = {
    "clouds": {"aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "eks", "cloud": "aws", "kubernetes_version": "1.33",
                  "network": {"cidr": "10.20.0.0/16"}}],
    "teams": [{"name": "research"}],
    "pools": [
        {"name": "p5", "cluster": "eks", "team": "research", "accelerator": "p5.48xlarge",
         "nodes": 2, "zone": "us-east-1a"},
        {"name": "cpu", "cluster": "eks", "team": "research", "accelerator": "m6i.4xlarge",
         "nodes": 3, "zone": "us-east-1a"},
    ],
}
GKE: dict[str, Any] = {
    "clouds": {"gcp": {"project": "acme-test-proj", "region": "us-central1"}},
    "clusters": [{"name": "c1", "cloud": "gcp"}],
    "teams": [{"name": "ml"}],
    "pools": [{"name": "ironwood", "cluster": "c1", "team": "ml", "accelerator": "tpu7x",
               "topology": "2x2x2", "zone": "us-central1-a"}],
}


def _plan(tmp: Path, spec: dict[str, Any], tag: str) -> dict[str, Any]:
    d = tmp / tag
    d.mkdir()
    path = d / "Pulumi.rolls.yaml"  # one stack name: two versions of one stack
    path.write_text(json.dumps({"config": {"accelfleet:fleet": spec}}))
    return json.loads(run_plan(path).to_json())


def _diff(tmp: Path, old: dict[str, Any], new: dict[str, Any]) -> PlanDiff:
    return diff_plans(_plan(tmp, old, "old"), _plan(tmp, new, "new"))


def _changed(pool: str, **fields: Any) -> dict[str, Any]:
    spec = copy.deepcopy(EKS)
    for p in spec["pools"]:
        if p["name"] == pool:
            p.update(fields)
    return spec


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _plan(tmp_path_factory.mktemp("base"), EKS, "base")


def _rolls(base: dict[str, Any], tmp: Path, new: dict[str, Any]) -> PlanDiff:
    return diff_plans(base, _plan(tmp, new, "new"))


@pytest.mark.parametrize("fields", [
    {"disk_size_gb": 500},  # the issue's: disk size
    {"capacity": {"reservation": "cr-0123456789abcdef0"}},  # the issue's: a reservation
    {"fabric": "off", "placement": "none"},  # the issue's: fabric (and placement)
])
def test_issue_launch_template_changes_roll_every_node(base: dict[str, Any], tmp_path: Path,
                                                       fields: dict[str, Any]) -> None:
    d = _rolls(base, tmp_path, _changed("p5", **fields))
    (roll,) = d.node_rolls
    assert (roll.pool, roll.pool_kind, roll.nodes) == ("p5", "node group", 2)
    assert roll.gated  # an EFA GPU pool is gated by default
    assert not d.node_replacements and not d.destroyed_pools
    text = render_text(d)
    assert "1 pool rolling every node" in text
    assert "ROLLS node group p5 (its 2 nodes are each replaced by a new node; the gate " \
           "proves each new node again" in text


def test_issue_removing_a_placement_group_destroys_no_pool(base: dict[str, Any],
                                                           tmp_path: Path) -> None:
    """The issue's instance: the pool leaves its placement group (here: it moves onto an
    On-Demand Capacity Reservation, which gets none): the group is removed, the node group
    rolls, and no pool is destroyed."""
    d = _rolls(base, tmp_path, _changed("p5", capacity={"reservation":
                                                        "cr-0123456789abcdef0"}))
    removed = [r for r in d.of("remove") if r.type == "aws:ec2/placementGroup:PlacementGroup"]
    assert removed and d.destroyed_pools == []
    assert "DESTROYS" not in render_text(d)


def test_issue_a_version_bump_rolls_every_group(base: dict[str, Any], tmp_path: Path) -> None:
    spec = copy.deepcopy(EKS)
    spec["clusters"][0]["kubernetes_version"] = "1.34"
    d = _rolls(base, tmp_path, spec)
    rolled = {r.pool: r for r in d.node_rolls}
    # every node group: the GPU pool, the CPU pool and the system pool
    assert set(rolled) == {"p5", "cpu", "eks/system"}
    assert rolled["cpu"].nodes == 3 and not rolled["cpu"].gated
    assert all("version 1.33 -> 1.34" in " ".join(r.changes) for r in rolled.values())


def test_own_a_cpu_pool_disk_change_rolls_it_ungated(base: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """Own instance: a CPU pool (no gate) rolls too, and the words say its new nodes take
    work unproven."""
    d = _rolls(base, tmp_path, _changed("cpu", disk_size_gb=400))
    (roll,) = d.node_rolls
    assert (roll.pool, roll.nodes, roll.gated) == ("cpu", 3, False)
    assert "ungated: new nodes take work unproven" in render_text(d)


def test_own_the_system_pool_disk_change_rolls_it(base: dict[str, Any], tmp_path: Path) -> None:
    """Own instance: the cluster's system pool, sized under clusters[].system_pool."""
    spec = copy.deepcopy(EKS)
    spec["clusters"][0]["system_pool"] = {"disk_size_gb": 200}
    d = _rolls(base, tmp_path, spec)
    assert [r.pool for r in d.node_rolls] == ["eks/system"]


def test_own_a_label_change_rolls_nothing(base: dict[str, Any], tmp_path: Path) -> None:
    """Own instance, the other side: labels are node group config EKS updates in place."""
    d = _rolls(base, tmp_path, _changed("p5", labels={"example.com/owner": "ml"}))
    assert d.resources and not d.node_rolls and not d.node_replacements


def test_own_a_replaced_group_is_not_also_rolled(base: dict[str, Any], tmp_path: Path) -> None:
    """Own instance: spot -> on-demand replaces the group (capacityType is ForceNew); its
    launch template change is not reported a second time as a roll."""
    d = _rolls(base, tmp_path, _changed("cpu", capacity="spot"))
    assert [r.pool for r in d.node_replacements] == ["cpu"]
    assert d.node_rolls == []


# -- tpu7x: a topology change replaces the slice ---------------------------------------------

def test_issue_tpu7x_topology_change_replaces_the_slice(tmp_path: Path) -> None:
    new = copy.deepcopy(GKE)
    new["pools"][0]["topology"] = "2x2x4"
    d = _diff(tmp_path, GKE, new)
    (slice_,) = d.node_replacements
    assert slice_.pool == "ironwood" and slice_.pool_kind == "TPU slice"
    assert any(f.path.startswith("placementPolicy") and f.replaces for f in slice_.fields)
    # the workload policy is replaced by one of another name (created beside the old one,
    # never under its name)
    (policy,) = [r for r in d.resources
                 if r.type == "gcp:compute/resourcePolicy:ResourcePolicy"]
    assert policy.replaced
    (name,) = [f for f in policy.fields if f.path == "name"]
    assert "2x2x2" in name.old and "2x2x4" in name.new
    assert "its 2 nodes are destroyed, 4 created" in render_text(d)


def test_own_tpu7x_flex_start_topology_change_replaces_the_slice(tmp_path: Path) -> None:
    """Own instance: an autoscaled flex-start slice has no nodeCount to change; the policy's
    name still moves with the topology."""
    old = copy.deepcopy(GKE)
    old["clusters"][0]["kubernetes_version"] = "1.34"
    old["pools"][0]["capacity"] = "flex-start"
    new = copy.deepcopy(old)
    new["pools"][0]["topology"] = "2x2x4"
    d = _diff(tmp_path, old, new)
    assert [r.pool for r in d.node_replacements] == ["ironwood"]


def test_own_removing_a_tpu7x_pool_destroys_one_pool(tmp_path: Path) -> None:
    """Own instance: removing the slice removes its workload policy too; only the node pool
    is a pool's destruction."""
    new = copy.deepcopy(GKE)
    new["pools"].append({"name": "other", "cluster": "c1", "team": "ml",
                         "accelerator": "v6e 2x2", "zone": "us-central1-b"})
    d = diff_plans(_plan(tmp_path, new, "old"), _plan(tmp_path, GKE, "new"))
    assert [r.pool for r in d.destroyed_pools] == ["other"]
    new["pools"] = new["pools"][1:]
    d = diff_plans(_plan(tmp_path, GKE, "old2"), _plan(tmp_path, new, "new2"))
    assert [r.type for r in d.destroyed_pools] == ["gcp:container/nodePool:NodePool"]


# -- the rule, generated over paths ------------------------------------------------------------

_LT = "aws:ec2/launchTemplate:LaunchTemplate"
_NG = "aws:eks/nodeGroup:NodeGroup"
_SEGMENT = st.sampled_from(["blockDeviceMappings[0]", "ebs", "volumeSize", "placement",
                            "groupName", "networkInterfaces[1]", "interfaceType",
                            "capacityReservationSpecification", "metadataOptions", "tags",
                            "description", "instanceType", "labels", "version", "taints",
                            "scalingConfig", "desiredSize", "releaseVersion",
                            "launchTemplate", "updateDefaultVersion"])


@given(st.lists(_SEGMENT, min_size=1, max_size=4).map(".".join))
def test_property_a_template_change_rolls_unless_it_is_the_templates_own(path: str) -> None:
    """Generated: any launch template path rolls the nodes except the template's own
    description, tags and default-version settings; a node group path rolls exactly under
    version, releaseVersion and launchTemplate.version."""
    head = path.split(".")[0].split("[")[0]
    own = head in ("description", "tags", "tagsAll", "updateDefaultVersion", "defaultVersion")
    assert (roll_for(_LT, path) is not None) is (not own)
    plain = path.replace("[0]", "").replace("[1]", "")
    expected = plain.split(".")[0] in ("version", "releaseVersion") \
        or plain.startswith("launchTemplate.version")
    assert (roll_for(_NG, path) is not None) is expected


def test_every_roll_rule_cites_its_source() -> None:
    for type_, (_, _, _, source) in roll_table().items():
        assert ("managed-node-update-behavior" in source if type_.startswith("aws:")
                else "cluster_service.proto" in source), type_


def test_node_groups_of_a_cluster_without_a_version_get_the_clusters(
        tmp_path: Path) -> None:
    """Issue 36 "Also": a cluster that names no kubernetes_version runs the catalog's default,
    and so does every node group (each had `version` unset: created at the cluster's version
    of that day, and never moved by a later bump)."""
    from fleet.catalog import load_catalog

    spec = copy.deepcopy(EKS)
    del spec["clusters"][0]["kubernetes_version"]
    plan = _plan(tmp_path, spec, "noversion")
    default = load_catalog().eks_addons.default_kubernetes_version
    groups = [r for r in plan["resources"] if r["type"] == _NG]
    assert len(groups) == 3  # p5, cpu, system
    assert {g["inputs"].get("version") for g in groups} == {default}
    (cluster,) = [r for r in plan["resources"] if r["type"] == "aws:eks/cluster:Cluster"]
    assert cluster["inputs"]["version"] == default
