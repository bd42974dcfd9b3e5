"""Kueue's webhooks do not run on the test control plane (its CRDs do: the objects are dry-run
in tests/controlplane/test_dry_run_plan.py), so what they alone refuse is checked here on every
Kueue object the plan makes, for the example, the TPU + routing and the longest-names stacks.

The rules, from kubernetes-sigs/kueue v0.19.2 (8eab68778fc1b52affe165fdf5af29d1e9b4f3cb,
read 2026-11-28), pkg/webhooks/clusterqueue_webhook.go: at most 256 flavors and 256 covered
resources over all resource groups, at most 512 flavor-resource pairs per group; no resource
covered twice, no flavor listed twice; each flavor's resources in the order and with the names
of its group's coveredResources; quotas never negative; a borrowing or lending limit only with
a cohort; a lending limit at most the nominal quota. resourceflavor_webhook.go: nodeLabels
are valid labels, nodeTaints have no duplicate key and effect. The project's own checks of
these live in fleet.rules.routing (MAX_FLAVORS and the flavor label and toleration bounds);
this asserts what the components made of them."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from tests.controlplane._dry_run import STACKS, plan_of

QUANTITY = re.compile(r"^(\d+)(m|Ki|Mi|Gi|Ti)?$")


def _kueue(stack: str) -> list[dict[str, Any]]:
    return [r.inputs for r in plan_of(stack).resources
            if r.type.startswith("kubernetes:kueue.x-k8s.io/")]


def _milli(q: str) -> int:
    m = QUANTITY.match(q)
    assert m, f"quantity {q!r} is not one accelfleet writes"
    scale = {None: 1000, "m": 1, "Ki": 1000 * 2**10, "Mi": 1000 * 2**20, "Gi": 1000 * 2**30,
             "Ti": 1000 * 2**40}[m[2]]
    return int(m[1]) * scale


def cluster_queue_problems(cq: dict[str, Any]) -> list[str]:
    """What Kueue v0.19.2's ClusterQueue webhook would refuse in `cq`."""
    spec, out = cq["spec"], []
    groups = spec.get("resourceGroups") or []
    has_cohort = bool(spec.get("cohortName"))
    if sum(len(g.get("flavors") or []) for g in groups) > 256:
        out.append("more than 256 flavors")
    if sum(len(g.get("coveredResources") or []) for g in groups) > 256:
        out.append("more than 256 covered resources")
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for g in groups:
        covered = list(g.get("coveredResources") or [])
        if sum(len(f.get("resources") or []) for f in g.get("flavors") or []) > 512:
            out.append("more than 512 flavor-resource pairs in a group")
        for name in covered:
            if name in seen_resources:
                out.append(f"resource {name} covered twice")
            seen_resources.add(name)
        for f in g.get("flavors") or []:
            if f["name"] in seen_flavors:
                out.append(f"flavor {f['name']} twice")
            seen_flavors.add(f["name"])
            for i, rq in enumerate(f.get("resources") or []):
                if i >= len(covered):
                    break
                if rq["name"] != covered[i]:
                    out.append(f"{f['name']}: {rq['name']} is not coveredResources[{i}]")
                for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                    if key in rq and str(rq[key]).startswith("-"):
                        out.append(f"{f['name']}.{rq['name']}.{key} is negative")
                for key in ("borrowingLimit", "lendingLimit"):
                    if key in rq and not has_cohort:
                        out.append(f"{f['name']}.{rq['name']}.{key} without a cohort")
                if "lendingLimit" in rq and \
                        _milli(str(rq["lendingLimit"])) > _milli(str(rq["nominalQuota"])):
                    out.append(f"{f['name']}.{rq['name']}.lendingLimit over nominalQuota")
    return out


def resource_flavor_problems(rf: dict[str, Any]) -> list[str]:
    spec, out = rf.get("spec") or {}, []
    taints = [(t["key"], t["effect"]) for t in spec.get("nodeTaints") or []]
    if len(taints) != len(set(taints)):
        out.append(f"duplicate node taints {taints}")
    for key, value in (spec.get("nodeLabels") or {}).items():
        if len(value) > 63 or len(key.rpartition("/")[2]) > 63:
            out.append(f"node label {key}={value} past 63")
    return out


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_every_planned_kueue_object_passes_kueues_webhook_rules(stack: str) -> None:
    objects = _kueue(stack)
    kinds = {o["kind"] for o in objects}
    assert {"ClusterQueue", "ResourceFlavor", "LocalQueue"} <= kinds
    problems = {o["metadata"]["name"]: (cluster_queue_problems(o) if o["kind"] ==
                                        "ClusterQueue" else resource_flavor_problems(o))
                for o in objects if o["kind"] in ("ClusterQueue", "ResourceFlavor")}
    assert not {k: v for k, v in problems.items() if v}, problems


def test_the_oracle_refuses_what_the_webhook_would() -> None:
    """The rules above bite: a lending limit over the nominal quota, a limit with no cohort,
    resources out of coveredResources' order, a flavor twice."""
    cq = copy.deepcopy(next(o for o in _kueue("example") if o["kind"] == "ClusterQueue" and
                            o["metadata"]["name"] == "research"))
    group = cq["spec"]["resourceGroups"][0]
    flavor = group["flavors"][0]
    flavor["resources"][0]["lendingLimit"] = "999999"
    cq["spec"].pop("cohortName")
    flavor["resources"][0], flavor["resources"][1] = flavor["resources"][1], \
        flavor["resources"][0]
    group["flavors"].append(dict(flavor))
    said = " | ".join(cluster_queue_problems(cq))
    for words in ("over nominalQuota", "without a cohort", "is not coveredResources[0]",
                  "twice"):
        assert words in said, said
