"""A cloud's region has one home (issue 22): `FleetSpec.region_of(cloud)`. Six places used to
pick `clouds.gcp if cloud == "gcp" else clouds.aws` and read its region (the rules, the system
pools, pool requests twice, smoke's cluster references); the components read each cloud's
own. Every one asks `region_of` now, and the source holds no other lookup."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleet import load_fleet
from fleet.spec.fields import FleetSpec
from fleet.stack.read import EXAMPLE_STACK

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("fleet", "components", "smoke", "cli", "stacks")
HOME = Path("fleet/spec/fields.py")  # region_of itself
# how a region was looked up beside region_of: picking the cloud's section by its name
LOOKUPS = re.compile(r"clouds\.(gcp|aws) if |getattr\([\w.]*clouds, |\.(gcp|aws)\.region\b|"
                     r"\b(gcp|aws|aws_cloud|declared|cloud)\.region\b")


def test_region_of_each_cloud() -> None:
    spec = FleetSpec.model_validate({
        "clouds": {"gcp": {"project": "acme-ml-prod", "region": "us-central1"},
                   "aws": {"account": "123456789012", "region": "us-east-1"}}})
    assert spec.region_of("gcp") == "us-central1"
    assert spec.region_of("aws") == "us-east-1"
    assert spec.clouds.of("gcp") is spec.clouds.gcp and spec.clouds.of("aws") is spec.clouds.aws
    only_gcp = FleetSpec.model_validate({"clouds": {"gcp": {"project": "acme-ml-prod",
                                                            "region": "europe-west4"}}})
    assert only_gcp.region_of("aws") is None and only_gcp.region_of("azure") is None


def test_every_pool_and_system_pool_lives_in_its_clouds_region() -> None:
    fleet = load_fleet(str(EXAMPLE_STACK))
    for pool in (*fleet.pools, *fleet.system_pools):
        assert pool.region == fleet.spec.region_of(pool.cloud), pool.name


@pytest.mark.parametrize("package", PACKAGES)
def test_no_region_lookup_beside_region_of(package: str) -> None:
    found = []
    for path in sorted((REPO / package).rglob("*.py")):
        if path.relative_to(REPO) == HOME:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if LOOKUPS.search(line.split("#", 1)[0]):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not found, "use FleetSpec.region_of(cloud):\n" + "\n".join(found)
