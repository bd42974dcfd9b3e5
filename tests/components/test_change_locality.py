"""Issue 27, class 3: a change touches only what it changes. Over generated fleets of both
clouds (a GKE and an EKS cluster, a few small pools in a few zones), adding, removing or
resizing one pool replaces nothing outside that pool in `plan --diff` (the replacement table's
ForceNew fields, components/engine/data/replacements.yaml). Few examples and small fleets, so
that it runs in the default test run; derandomized, so that CI sees the same fleets each time.

Before the fix, adding a pool in us-east-1a to an EKS cluster in 1d and 1e renumbered every
subnet (ranges were handed out in sorted zone order) and the diff showed each replaced."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from components.engine.diff import diff_plans
from components.engine.plan import run_plan

BASE: dict[str, Any] = {
    "clouds": {"gcp": {"project": "acme-ml-test", "region": "us-central1"},
               "aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [
        {"name": "c1", "cloud": "gcp", "authorized_cidrs": ["203.0.113.0/24"]},
        {"name": "e1", "cloud": "aws", "network": {"cidr": "10.20.0.0/16"},
         "authorized_cidrs": ["203.0.113.0/24"]}],
    "teams": [{"name": "t"}],
}
# (cluster, accelerator, zones it may take): machines the catalog offers in those zones
MENU = [("c1", "g2-standard-24", ["us-central1-a", "us-central1-b"]),
        ("c1", "n2-standard-8", ["us-central1-a", "us-central1-b", "us-central1-c"]),
        ("e1", "g6.xlarge", [f"us-east-1{z}" for z in "abcdef"])]


@st.composite
def pools(draw: st.DrawFn, name: str) -> dict[str, Any]:
    cluster, accelerator, zones = draw(st.sampled_from(MENU))
    return {"name": name, "cluster": cluster, "team": "t", "accelerator": accelerator,
            "nodes": draw(st.integers(1, 2)), "zone": draw(st.sampled_from(zones))}


@st.composite
def fleets_and_changes(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str, str]:
    count = draw(st.integers(1, 3))
    existing = [draw(pools(f"p{i}")) for i in range(count)]
    change = draw(st.sampled_from(["add", "remove", "resize"] if count > 1 else
                                  ["add", "resize"]))
    return existing, change, draw(st.sampled_from([p["name"] for p in existing]))


def _plan(tmp: Path, name: str, pool_list: list[dict[str, Any]]) -> dict[str, Any]:
    spec = {**copy.deepcopy(BASE), "pools": pool_list}
    # each version of the stack in a directory of its own: two stack files side by side are
    # two stacks, whose project-wide names would collide (fleet.rules.scope, issue 36)
    (tmp / name).mkdir(exist_ok=True)
    path = tmp / name / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {"accelfleet:fleet": spec}}), encoding="utf-8")
    return run_plan(path).to_dict()


@settings(max_examples=4, deadline=None, derandomize=True,
          phases=(Phase.explicit, Phase.generate),  # no shrinking: bounded even when failing
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=fleets_and_changes(), added=pools("new"))
def test_one_pool_changes_replace_nothing_else(tmp_path: Path, case: Any,
                                               added: dict[str, Any]) -> None:
    existing, change, target = case
    after = copy.deepcopy(existing)
    if change == "add":
        after.append(added)
        target = "new"
    elif change == "remove":
        after = [p for p in after if p["name"] != target]
    else:
        next(p for p in after if p["name"] == target)["nodes"] += 1
    diff = diff_plans(_plan(tmp_path, "before", existing), _plan(tmp_path, "after", after))
    elsewhere = [f"{c.key} ({', '.join(f.path for f in c.fields if f.replaces)})"
                 for c in diff.resources if c.replaced and c.pool != target]
    assert elsewhere == [], f"{change} {target}: {elsewhere}"


# Each cluster's gate inventory ConfigMap holds every pool of the cluster; pulumi-kubernetes
# replaces a ConfigMap whose data changes unless its provider sets enableConfigMapMutable,
# which components.k8s.cluster_provider now does for GKE and EKS alike (this test was a strict
# xfail until then: every pool added, removed or resized replaced `<cluster>-gate-configmap`).
def test_adding_a_pool_replaces_no_cluster_object(tmp_path: Path) -> None:
    old = [{"name": "g1", "cluster": "c1", "team": "t", "accelerator": "g2-standard-24",
            "nodes": 1, "zone": "us-central1-a"}]
    new = [*old, {"name": "g2", "cluster": "c1", "team": "t", "accelerator": "n2-standard-8",
                  "nodes": 1, "zone": "us-central1-b"}]
    diff = diff_plans(_plan(tmp_path, "old", old), _plan(tmp_path, "new", new))
    assert [c.key for c in diff.replacements if c.pool != "g2"] == []


def test_adding_a_zone_renumbers_no_subnet(tmp_path: Path) -> None:
    """The issue's example, as one fixed case."""
    old = [{"name": "g1", "cluster": "e1", "team": "t", "accelerator": "g6.xlarge",
            "nodes": 1, "zones": ["us-east-1d", "us-east-1e"], "placement": "none"}]
    new = [*old, {"name": "g2", "cluster": "e1", "team": "t", "accelerator": "g6.xlarge",
                  "nodes": 1, "zone": "us-east-1a"}]
    diff = diff_plans(_plan(tmp_path, "old", old), _plan(tmp_path, "new", new))
    assert [c.key for c in diff.resources if c.replaced] == []
