"""Issue 36: each pool's upgrade policy (fleet.upgrade) is rendered into its node pool or node
group (GKE upgradeSettings, EKS updateConfig), recorded per pool in the plan, and named beside
each roll `plan --diff` shows."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from cli.plan_diff import render_text
from components.engine.diff import diff_plans
from components.engine.plan import run_plan

SPEC: dict[str, Any] = {
    "clouds": {"gcp": {"project": "acme-test-proj", "region": "us-central1"},
               "aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "c1", "cloud": "gcp"},
                 {"name": "eks", "cloud": "aws", "kubernetes_version": "1.33",
                  "network": {"cidr": "10.20.0.0/16"}}],
    "teams": [{"name": "ml"}],
    "pools": [
        {"name": "l4", "cluster": "c1", "team": "ml", "accelerator": "g2-standard-24",
         "nodes": 3, "zone": "us-central1-a"},
        {"name": "l4r", "cluster": "c1", "team": "ml", "accelerator": "g2-standard-24",
         "nodes": 2, "zone": "us-central1-a", "capacity": {"reservation": "r1"}},
        {"name": "bg", "cluster": "c1", "team": "ml", "accelerator": "g2-standard-24",
         "nodes": 2, "zone": "us-central1-a",
         "upgrade": {"strategy": "blue-green",
                     "blue_green": {"batch_percent": 50, "batch_soak_s": 600,
                                    "pool_soak_s": 3600}}},
        {"name": "trillium", "cluster": "c1", "team": "ml", "accelerator": "v6e 4x4",
         "zone": "us-central1-b"},
        {"name": "p5", "cluster": "eks", "team": "ml", "accelerator": "p5.48xlarge",
         "nodes": 2, "zone": "us-east-1a", "upgrade": {"max_unavailable_percent": 50}},
    ],
}


def _plan(tmp: Path, spec: dict[str, Any], tag: str) -> dict[str, Any]:
    d = tmp / tag
    d.mkdir()
    path = d / "Pulumi.upgrades.yaml"
    path.write_text(json.dumps({"config": {"accelfleet:fleet": spec}}))
    return json.loads(run_plan(path).to_json())


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _plan(tmp_path_factory.mktemp("plan"), SPEC, "base")


def _inputs(plan: dict[str, Any], type_: str, name: str) -> dict[str, Any]:
    (r,) = [r for r in plan["resources"] if r["type"] == type_ and r["name"] == name]
    return dict(r["inputs"])


_NP = "gcp:container/nodePool:NodePool"


def test_gke_pools_render_their_policy(plan: dict[str, Any]) -> None:
    assert _inputs(plan, _NP, "l4-pool")["upgradeSettings"] == {
        "maxSurge": 1, "maxUnavailable": 0, "strategy": "SURGE"}
    assert _inputs(plan, _NP, "l4r-pool")["upgradeSettings"] == {
        "maxSurge": 0, "maxUnavailable": 1, "strategy": "SURGE"}
    (tpu,) = [r for r in plan["resources"] if r["type"] == _NP and "trillium" in r["name"]]
    assert tpu["inputs"]["upgradeSettings"]["maxSurge"] == 0
    assert _inputs(plan, _NP, "bg-pool")["upgradeSettings"] == {
        "strategy": "BLUE_GREEN", "blueGreenSettings": {
            "standardRolloutPolicy": {"batchPercentage": 0.5, "batchSoakDuration": "600s"},
            "nodePoolSoakDuration": "3600s"}}


def test_eks_group_renders_its_policy(plan: dict[str, Any]) -> None:
    ng = _inputs(plan, "aws:eks/nodeGroup:NodeGroup", "p5-ng")
    assert ng["updateConfig"] == {"maxUnavailablePercentage": 50}


def test_plan_rows_carry_the_policy(plan: dict[str, Any]) -> None:
    rows = {p["name"]: p["upgrade"] for p in plan["pools"]}
    assert rows["l4"]["words"] == "surge 1, unavailable 0" and not rows["l4"]["declared"]
    assert rows["bg"]["declared"] and rows["bg"]["strategy"] == "blue-green"
    assert rows["p5"]["words"] == "50% unavailable at a time, new nodes first"


def test_a_roll_names_the_policy(plan: dict[str, Any], tmp_path: Path) -> None:
    new = copy.deepcopy(SPEC)
    for p in new["pools"]:
        if p["name"] in ("l4r", "p5"):
            p["disk_size_gb"] = 400
    text = render_text(diff_plans(plan, _plan(tmp_path, new, "new")))
    assert "ROLLS node pool l4r (its 2 nodes are each replaced by a new node; the gate " \
           "proves each new node again before it takes work; upgrade policy: surge 0, " \
           "unavailable 1)" in text
    assert "ROLLS node group p5 (" in text and \
        "upgrade policy: 50% unavailable at a time, new nodes first)" in text
