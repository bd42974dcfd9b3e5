"""Zone availability (catalog zones.yaml): the data covers every accelerator of the catalog (a
zone list, or `unknown` with the reason), is dated and sourced, names only zones that exist, and
the rule refuses a zone that does not offer a pool's accelerator, naming those that do, while
never refusing where the catalog cannot tell."""

from __future__ import annotations

from typing import Any

import pytest

from fleet.catalog import load_catalog
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import pool, problems

RESTRICTED = {"us-central2"}  # Cloud TPU v4's region: offered by request, not in regions.yaml




def test_every_accelerator_of_the_catalog_is_covered_or_said_unknown() -> None:
    cat = load_catalog()
    offers = cat.zone_offers
    for m in cat.machines.values():
        if m.cloud == "gcp" and m.gpus:
            assert m.family in offers.gcp_families or offers.gcp_unknown.get(m.family), m.family
        if m.cloud == "aws" and m.gpus:
            assert m.name in offers.aws_types or m.family in offers.aws_unknown, m.name
    for gen in cat.tpus:
        assert gen in offers.gcp_tpus or offers.gcp_unknown.get(gen), gen
    assert offers.gcp_unknown["cpu"] and offers.aws_unknown["cpu"]
    assert offers.gcp_unknown["tpu7x"]  # said so, not guessed
    for cloud in ("gcp", "aws"):
        assert "skypilot-catalog" in offers.sources[cloud] and offers.as_of[cloud] == "2026-11-23"


def test_every_zone_listed_exists() -> None:
    cat = load_catalog()
    gcp, aws = cat.regions["gcp"], cat.regions["aws"]
    for table in [*cat.zone_offers.gcp_families.values(), *cat.zone_offers.gcp_tpus.values()]:
        for region, zones in table.items():
            if region in RESTRICTED:
                continue
            assert region in gcp.zones, region
            assert all(gcp.zone_ok(z) for z in zones), zones
    for table in cat.zone_offers.aws_types.values():
        for region, ids in table.items():
            assert region in aws.zones, region
            count = len(aws.zones[region])
            assert all(int(i.rsplit("az", 1)[1]) <= count for i in ids), (region, ids)


@pytest.mark.parametrize(("accelerator", "zone", "offered"), [
    ("a3-ultragpu-8g", "us-central1-a", ("us-central1-b",)),
    ("a4-highgpu-8g", "us-central1-c", ("us-central1-b",)),
    ("a3-highgpu-8g", "us-central1-f", ("us-central1-a", "us-central1-b", "us-central1-c")),
    ("v5p-128", "us-central1-b", ("us-central1-a",)),
    ("v6e 2x4", "us-central1-f", ("us-central1-a", "us-central1-b", "us-central1-c")),
])
def test_a_zone_without_the_accelerator_is_refused_naming_those_with_it(
        spec: dict[str, Any], accelerator: str, zone: str, offered: tuple[str, ...]) -> None:
    spec["pools"] = [pool(name="p", accelerator=accelerator, zone=zone,
                          nodes=None if accelerator.startswith("v") else 1)]
    [p] = problems(spec)
    assert p.where == "pools 'p'.zone" and "does not offer" in p.message
    assert p.accepted == offered and all(z in p.hint for z in offered)
    assert "zones.yaml" in p.message and "2026-11-23" in p.message
    spec["pools"][0]["zone"] = offered[0]
    assert validate_fleet(spec).pools[0].spec.zones == [offered[0]]


def test_a_region_without_it_names_the_regions_with_it(spec: dict[str, Any]) -> None:
    spec["pools"] = [pool(name="v4", accelerator="v4-8", nodes=None)]
    [p] = problems(spec)
    assert "no zone of us-central1 offers TPU v4" in p.message and "us-central2" in p.message


def test_aws_zones_are_checked_where_codes_map_uniformly(spec: dict[str, Any]) -> None:
    spec["clouds"]["aws"]["region"] = "eu-west-2"  # p5e.48xlarge: euw2-az2 only
    spec["pools"] = [pool(name="h200", cluster="eks", accelerator="p5e.48xlarge",
                          zone="eu-west-2a")]
    [p] = problems(spec)
    assert p.accepted == ("eu-west-2b",) and "p5e.48xlarge" in p.message
    spec["pools"][0]["zone"] = "eu-west-2b"
    assert validate_fleet(spec).pools


@pytest.mark.parametrize(("region", "accelerator", "zone"), [
    ("us-east-1", "p6-b200.48xlarge", "us-east-1a"),  # codes map per account: not checked
    ("eu-west-3", "p5.48xlarge", "eu-west-3a"),  # a Region the source does not list
    ("us-east-2", "g5.48xlarge", "us-east-2a"),  # rows not read
])
def test_nothing_is_refused_where_the_catalog_cannot_tell(
        spec: dict[str, Any], region: str, accelerator: str, zone: str) -> None:
    spec["clouds"]["aws"]["region"] = region
    spec["pools"] = [pool(name="g", cluster="eks", accelerator=accelerator, zone=zone)]
    assert validate_fleet(spec).pools
    answer = load_catalog().zones_offering(validate_fleet(spec).pools[0].shape, region)
    assert not answer.known and answer.note


def test_unknown_tpus_and_ai_zones_are_not_refused(spec: dict[str, Any]) -> None:
    spec["pools"] = [pool(name="ironwood", accelerator="tpu7x 2x2x1", nodes=None),
                     pool(name="ai", zone="us-central1-ai1a")]
    assert len(validate_fleet(spec).pools) == 2
