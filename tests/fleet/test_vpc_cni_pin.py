"""Issue 36 "Also": the vpc-cni pin verified against AWS's published "Amazon VPC CNI versions"
table (catalog aws.yaml `vpc_cni_published`, copies read 2026-11-28): validate warns when the
table read has no row for the cluster's Kubernetes version (the pin is unverified) or lists
other versions for it; a listed pin passes quietly."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from fleet.catalog import load_catalog
from fleet.errors import Problem
from fleet.rules.eks import check_vpc_cni
from fleet.rules.validate import validate_fleet
from fleet.spec.fields import Cluster
from tests.fleet.conftest import BASE


def _vpc_cni_warnings(spec: dict[str, Any]) -> list[str]:
    return [w.message for w in validate_fleet(spec).warnings if "vpc-cni" in w.message]


def _eks(version: str | None) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    if version is not None:
        spec["clusters"][1]["kubernetes_version"] = version
    return spec


def test_a_listed_pin_passes_quietly() -> None:
    assert _vpc_cni_warnings(_eks("1.34")) == []  # v1.20.4-eksbuild.1, listed for 1.34
    assert _vpc_cni_warnings(_eks("1.33")) == []  # v1.20.1-eksbuild.3, listed for 1.33


def test_a_version_with_no_published_row_is_unverified() -> None:
    (found,) = _vpc_cni_warnings(_eks("1.35"))
    assert "is not verified" in found and "no row for 1.35" in found


def test_own_a_cluster_without_a_version_is_checked_at_the_default() -> None:
    default = load_catalog().eks_addons.default_kubernetes_version
    listed = load_catalog().eks_addons.vpc_cni_listed(default)
    assert bool(_vpc_cni_warnings(_eks(None))) is (listed is None)


def test_own_a_pin_the_table_does_not_list_warns() -> None:
    addons = load_catalog().eks_addons
    versions = {k: dict(v) for k, v in addons.versions.items()}
    versions["1.33"]["vpc-cni"] = "v1.19.0-eksbuild.1"
    changed = dataclasses.replace(addons, versions=versions)
    warnings: list[Problem] = []
    check_vpc_cni(Cluster(name="eks", cloud="aws", kubernetes_version="1.33"), changed,
                  warnings)
    (found,) = warnings
    assert "v1.19.0-eksbuild.1" in found.message and "not a version AWS's table" in found.message
    assert "describe-addon-versions" in found.hint


def test_own_a_gke_cluster_is_not_checked() -> None:
    warnings: list[Problem] = []
    check_vpc_cni(Cluster(name="gke", cloud="gcp"), load_catalog().eks_addons, warnings)
    assert warnings == []


def test_every_pin_is_listed_or_known_unverified() -> None:
    """The catalog as shipped: every pin AWS's table lists for its version, except the
    versions no copy read has a row for (1.35), which validate calls unverified."""
    addons = load_catalog().eks_addons
    unverified = {v for v in addons.versions if addons.vpc_cni_listed(v) is None}
    assert unverified == {"1.35"}
    for version, pins in addons.versions.items():
        listed = addons.vpc_cni_listed(version)
        assert listed is None or pins["vpc-cni"] in listed, version
