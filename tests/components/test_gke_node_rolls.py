"""Issue 36, class 4 on GKE: a node pool change the provider makes in place but GKE carries
out as a node upgrade (machine type, boot disk size or type, image type, version) recreates
every node of the pool: `plan --diff` shows it as ROLLS with the count of nodes and whether
the gate proves the new ones, as it does for EKS; a change that also replaces the pool is a
REPLACES only; labels and taints, which GKE applies to the running nodes, roll nothing.

Sources: replacements.yaml `gcp:container/nodePool:NodePool` `rolls` (googleapis
cluster_service.proto UpdateNodePoolRequest, GKE's node-images and update-existing-nodepools
pages, read 2026-11-28). Every instance here is this file's own (the issue names EKS's)."""

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

GKE: dict[str, Any] = {
    "clouds": {"gcp": {"project": "acme-test-proj", "region": "us-central1"}},
    "clusters": [{"name": "c1", "cloud": "gcp"}],
    "teams": [{"name": "ml"}],
    "pools": [
        {"name": "l4", "cluster": "c1", "team": "ml", "accelerator": "g2-standard-24",
         "nodes": 3, "zone": "us-central1-a"},
        {"name": "cpu", "cluster": "c1", "team": "ml", "accelerator": "n2-standard-8",
         "nodes": 2, "zone": "us-central1-a"},
        {"name": "trillium", "cluster": "c1", "team": "ml", "accelerator": "v6e 4x4",
         "zone": "us-central1-b"},
    ],
}
_NP = "gcp:container/nodePool:NodePool"


def _plan(tmp: Path, spec: dict[str, Any], tag: str) -> dict[str, Any]:
    d = tmp / tag
    d.mkdir()
    path = d / "Pulumi.gkerolls.yaml"  # one stack name: two versions of one stack
    path.write_text(json.dumps({"config": {"accelfleet:fleet": spec}}))
    return json.loads(run_plan(path).to_json())


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _plan(tmp_path_factory.mktemp("base"), GKE, "base")


def _changed(pool: str, **fields: Any) -> dict[str, Any]:
    spec = copy.deepcopy(GKE)
    for p in spec["pools"]:
        if p["name"] == pool:
            p.update(fields)
    return spec


def _rolls(base: dict[str, Any], tmp: Path, new: dict[str, Any]) -> PlanDiff:
    return diff_plans(base, _plan(tmp, new, "new"))


def test_own_a_gpu_pool_disk_size_change_rolls_every_node_gated(base: dict[str, Any],
                                                                tmp_path: Path) -> None:
    d = _rolls(base, tmp_path, _changed("l4", disk_size_gb=400))
    (roll,) = d.node_rolls
    assert (roll.pool, roll.pool_kind, roll.nodes, roll.gated) == ("l4", "node pool", 3, True)
    assert not d.node_replacements and not d.destroyed_pools
    text = render_text(d)
    assert "ROLLS node pool l4 (its 3 nodes are each replaced by a new node; the gate " \
           "proves each new node again" in text
    assert "nodeConfig.diskSizeGb 200 -> 400" in text


def test_own_a_cpu_pool_machine_type_change_rolls_it_ungated(base: dict[str, Any],
                                                            tmp_path: Path) -> None:
    """A CPU machine has no guest accelerators: only the machine type moves, in place."""
    d = _rolls(base, tmp_path, _changed("cpu", accelerator="n2-standard-16"))
    (roll,) = d.node_rolls
    assert (roll.pool, roll.nodes, roll.gated) == ("cpu", 2, False)
    assert "nodeConfig.machineType n2-standard-8 -> n2-standard-16" in " ".join(roll.changes)
    assert "ungated: new nodes take work unproven" in render_text(d)


def test_own_a_tpu_slice_disk_change_rolls_the_slice(base: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """A 4x4 v6e slice (4 hosts) with a larger boot disk: every host is recreated."""
    d = _rolls(base, tmp_path, _changed("trillium", disk_size_gb=300))
    (roll,) = d.node_rolls
    assert (roll.pool, roll.pool_kind, roll.nodes, roll.gated) == ("trillium", "TPU slice",
                                                                   4, True)


def test_own_the_gke_system_pool_disk_change_rolls_it(base: dict[str, Any],
                                                     tmp_path: Path) -> None:
    spec = copy.deepcopy(GKE)
    spec["clusters"][0]["system_pool"] = {"disk_size_gb": 150}
    d = _rolls(base, tmp_path, spec)
    assert [r.pool for r in d.node_rolls] == ["c1/system"]


def test_own_a_gpu_machine_change_replaces_and_does_not_also_roll(base: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    """g2-standard-24 (2 x L4) -> g2-standard-48 (4 x L4): the machine type would roll, but
    the guest accelerators' count is ForceNew, so the pool is replaced, reported once."""
    d = _rolls(base, tmp_path, _changed("l4", accelerator="g2-standard-48"))
    assert [r.pool for r in d.node_replacements] == ["l4"]
    assert d.node_rolls == []
    assert "ROLLS" not in render_text(d)


def test_own_gke_labels_and_taints_roll_nothing(base: dict[str, Any], tmp_path: Path) -> None:
    d = _rolls(base, tmp_path, _changed(
        "l4", labels={"example.com/owner": "ml"},
        taints=[{"key": "example.com/dedicated", "value": "ml"}]))
    assert d.resources and not d.node_rolls and not d.node_replacements


@given(st.sampled_from(["version", "nodeConfig.machineType", "nodeConfig.diskSizeGb",
                        "nodeConfig.diskType", "nodeConfig.imageType",
                        "nodeConfig.bootDisk.sizeGb", "nodeConfig.containerdConfig",
                        "nodeConfig.labels", "nodeConfig.taints[0].value",
                        "nodeConfig.resourceLabels", "nodeConfig.tags", "nodeCount",
                        "autoscaling.totalMaxNodeCount", "management.autoRepair"]))
def test_property_gke_rolls_exactly_on_node_upgrades(path: str) -> None:
    plain = path.split("[")[0]
    expected = plain == "version" or any(
        plain == p or plain.startswith(p + ".")
        for p in ("nodeConfig.machineType", "nodeConfig.diskSizeGb", "nodeConfig.diskType",
                  "nodeConfig.imageType", "nodeConfig.bootDisk",
                  "nodeConfig.containerdConfig"))
    assert (roll_for(_NP, path) is not None) is expected


def test_gke_roll_rule_cites_googles_sources() -> None:
    on_change, _, _, source = roll_table()[_NP]
    assert "cluster_service.proto" in source and "UpdateNodePoolRequest" in source
    assert "nodeConfig.machineType" in on_change
