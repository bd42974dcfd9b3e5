"""Issue 36, class 3: every cloud name says its scope (project, region, zone, account,
cluster), and a name wider than a stack that another stack file beside it derives in the
same scope is refused (fleet.rules.scope): each stack validates alone, the second
`pulumi up` would get 409.

The issue's instances are named as such; the others are this file's own."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleet import load_fleet
from fleet.errors import SpecError
from fleet.rules.scope import cross_stack_problems, wide_names
from fleet.rules.unique_names import derived_names
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import BASE, pool

ROOT = Path(__file__).resolve().parents[2]


def _write(d: Path, stack: str, spec: dict[str, Any]) -> Path:
    path = d / f"Pulumi.{stack}.yaml"
    path.write_text(json.dumps({"config": {"accelfleet:fleet": spec}}))
    return path


def _spec(**changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    spec.update(changes)
    return spec


def _tpu_vms(name: str = "vm") -> dict[str, Any]:
    spec = _spec()
    spec["clusters"] = [{"name": "c-" + name, "cloud": "gcp"}]
    spec["pools"] = [pool(name=name, cluster=None, runtime="tpu-vm", accelerator="v5e",
                          topology="2x2", nodes=None, zone="us-central1-a")]
    spec["clouds"] = {"gcp": spec["clouds"]["gcp"]}
    return spec


def _refused(path: Path) -> list[str]:
    with pytest.raises(SpecError) as err:
        load_fleet(str(path))
    return [p.message for p in err.value.problems]


def test_issue_two_stacks_of_cloud_tpu_vms_in_one_project(tmp_path: Path) -> None:
    """The issue's instance: `tpu-vms-vpc`, `tpu-vms-nodes` ... are fixed per project."""
    a = _write(tmp_path, "a", _tpu_vms("vm-a"))
    _write(tmp_path, "b", _tpu_vms("vm-b"))
    found = _refused(a)
    assert any("'tpu-vms-vpc' among the VPC networks of project acme-ml-prod" in m
               and "Pulumi.b.yaml" in m for m in found)


def test_issue_one_cloud_tpu_vm_name_in_one_zone(tmp_path: Path) -> None:
    """The issue's instance: the Cloud TPU VM itself (`<pool>-0`, per zone)."""
    a = _write(tmp_path, "a", _tpu_vms("vm"))
    _write(tmp_path, "b", _tpu_vms("vm"))
    problems = cross_stack_problems(a, validate_fleet(_tpu_vms("vm")))
    # one problem per place of this stack: the pool's runtime (the shared network) is told
    # once, and the VM name is on the same pool
    assert problems and "Pulumi.b.yaml" in problems[0].message


def test_issue_workload_policies_of_two_stacks_differ(tmp_path: Path) -> None:
    """The issue's `<pool>-wp`: a workload policy is named for its cluster too, so two stacks'
    tpu7x pools of one name in one region no longer share it."""
    def ironwood(cluster: str) -> dict[str, Any]:
        spec = _spec(clusters=[{"name": cluster, "cloud": "gcp",
                                "kubernetes_version": "1.34"}])
        spec["clouds"] = {"gcp": spec["clouds"]["gcp"]}
        spec["pools"] = [pool(name="ironwood", cluster=cluster, accelerator="tpu7x",
                              topology="2x2x2", nodes=None, zone="us-central1-c")]
        return spec

    a = _write(tmp_path, "a", ironwood("team-a"))
    _write(tmp_path, "b", ironwood("team-b"))
    load_fleet(str(a))
    names = {d.name for d in wide_names(load_fleet(str(a)))}
    assert any(n.startswith("ironwood-2x2x2-") for n in names)


def test_own_one_cluster_name_in_two_regions_shares_its_vpc(tmp_path: Path) -> None:
    """Own instance: GKE clusters of one name in two regions are two clusters, but a VPC
    network is global to the project: `ml-vpc` collides."""
    east = _spec(clusters=[{"name": "ml", "cloud": "gcp"}])
    east["clouds"] = {"gcp": {"project": "acme-ml-prod", "region": "us-east1"}}
    east["pools"] = [pool(cluster="ml", zone="us-east1-b", accelerator="g2-standard-24")]
    central = _spec(clusters=[{"name": "ml", "cloud": "gcp"}])
    central["clouds"] = {"gcp": central["clouds"]["gcp"]}
    central["pools"] = [pool(cluster="ml", accelerator="g2-standard-24")]
    a = _write(tmp_path, "a", east)
    _write(tmp_path, "b", central)
    found = _refused(a)
    assert any("'ml-vpc' among the VPC networks of project acme-ml-prod" in m for m in found)
    assert not any("GKE clusters" in m for m in found)  # two regions: two clusters


def test_own_one_eks_cluster_name_in_one_account_region(tmp_path: Path) -> None:
    """Own instance: an EKS cluster's name is unique per account and region."""
    def eks(region: str) -> dict[str, Any]:
        spec = _spec(clusters=[{"name": "train", "cloud": "aws"}])
        spec["clouds"] = {"aws": {"account": "123456789012", "region": region}}
        spec["pools"] = [pool(cluster="train", accelerator="g6.xlarge",
                              zone=f"{region}a")]
        return spec

    a = _write(tmp_path, "a", eks("us-east-1"))
    b = _write(tmp_path, "b", eks("us-east-1"))
    assert any("EKS clusters of account 123456789012 region us-east-1" in m
               for m in _refused(a))
    b.write_text(json.dumps({"config": {"accelfleet:fleet": eks("us-west-2")}}))
    load_fleet(str(a))  # another region: another cluster


def test_own_two_projects_share_nothing(tmp_path: Path) -> None:
    """Own instance: the same stack twice, in two projects, collides nowhere."""
    a = _write(tmp_path, "a", _tpu_vms("vm"))
    other = _tpu_vms("vm")
    other["clouds"]["gcp"]["project"] = "acme-ml-dev"
    _write(tmp_path, "b", other)
    load_fleet(str(a))


def test_own_the_plan_refuses_it_too(tmp_path: Path) -> None:
    """Own instance: `accelfleet plan` (what CI runs) reads the stack the same way."""
    from components.engine.plan import run_plan

    a = _write(tmp_path, "a", _tpu_vms("vm-a"))
    _write(tmp_path, "b", _tpu_vms("vm-b"))
    with pytest.raises(SpecError):
        run_plan(a)


# -- every name says its scope -----------------------------------------------------------------

_FIXTURES = ["stacks/Pulumi.example.yaml", "tests/components/fixtures/Pulumi.gcptest.yaml",
             "tests/components/fixtures/Pulumi.gcpcapacity.yaml"]


@settings(max_examples=10, deadline=None)
@given(stack=st.sampled_from(_FIXTURES))
def test_property_every_name_says_its_scope(stack: str) -> None:
    """Generated over the fixture stacks: each derived name's scope words name how far it
    reaches (a project's with no region or zone, a region's with its region, a zone's with
    its zone, an account's with its region, a cluster's with the cluster)."""
    fleet = load_fleet(str(ROOT / stack))
    for d in derived_names(fleet.spec, fleet.pools, fleet.system_pools, fleet.routing):
        words = d.scope
        assert d.reach in ("stack", "cluster", "project", "region", "zone"), d
        if d.reach == "project":
            assert " project " in words and " region " not in words and " zone " not in words
        elif d.reach == "region":
            assert " region " in words or " location " in words, d
        elif d.reach == "zone":
            assert " zone " in words, d
        elif d.reach == "cluster":
            assert " cluster " in words, d
        else:
            assert words.startswith("Pulumi names"), d
