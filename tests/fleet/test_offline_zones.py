"""Issue 36 "Also": Availability Zones closed to new resources (catalog aws.yaml
`offline_az_ids`: apne1-az3 in ap-northeast-1, with its sources). Zone codes map to AZ IDs per
account in the oldest Regions, so validate warns a pool there (it cannot tell which code is the
closed zone) and `pulumi up`, which reads the account's mapping, refuses a pool zone that is
it; where codes map uniformly, validate refuses the closed zone itself."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from components.aws._layout import AccountZones, cluster_zones
from fleet.catalog import load_catalog
from fleet.errors import InputError, Problem, Problems
from fleet.rules.eks import check_offline_zones
from fleet.rules.validate import validate_fleet

TOKYO: dict[str, Any] = {
    "clouds": {"aws": {"account": "123456789012", "region": "ap-northeast-1"}},
    "clusters": [{"name": "eks", "cloud": "aws", "kubernetes_version": "1.34"}],
    "teams": [{"name": "research"}],
    "pools": [{"name": "p5", "cluster": "eks", "team": "research",
               "accelerator": "p5.48xlarge", "nodes": 2, "zone": "ap-northeast-1a"}],
}


def test_the_catalog_names_apne1_az3_with_its_sources() -> None:
    addons = load_catalog().eks_addons
    assert addons.offline_az_ids["ap-northeast-1"] == ("apne1-az3",)
    assert "convox/rack#826" in addons.offline_az_ids_source
    assert "us-east-1" not in addons.offline_az_ids  # use1-az3: offers p5, not closed


def test_a_tokyo_pool_is_warned_validate_cannot_map_its_zone() -> None:
    fleet = validate_fleet(copy.deepcopy(TOKYO))
    found = [w for w in fleet.warnings if "apne1-az3" in w.message]
    assert len(found) == 1 and "pools 'p5'" in found[0].where
    assert "describe-availability-zones --region ap-northeast-1" in found[0].hint


def test_own_a_tokyo_system_pool_with_zones_is_warned_too() -> None:
    spec = copy.deepcopy(TOKYO)
    spec["clusters"][0]["system_pool"] = {"zones": ["ap-northeast-1c", "ap-northeast-1d"]}
    fleet = validate_fleet(spec)
    assert any("system_pool" in w.where and "apne1-az3" in w.message for w in fleet.warnings)


def test_own_a_region_without_closed_zones_is_quiet() -> None:
    spec = copy.deepcopy(TOKYO)
    spec["clouds"]["aws"]["region"] = "us-east-2"
    spec["pools"][0]["zone"] = "us-east-2a"
    assert not [w for w in validate_fleet(spec).warnings if "closed" in w.message]


def test_own_a_uniformly_mapped_region_refuses_the_closed_zone_itself() -> None:
    """us-east-2 maps codes uniformly (letter n is use2-azn): with use2-az2 closed (a catalog
    variant), us-east-2b is refused and us-east-2a passes."""
    catalog = load_catalog()
    spec = copy.deepcopy(TOKYO)
    spec["clouds"]["aws"]["region"] = "us-east-2"
    spec["pools"][0].update(zones=["us-east-2a", "us-east-2b"], accelerator="m6i.4xlarge")
    del spec["pools"][0]["zone"]
    (pool,) = validate_fleet(spec).pools
    variant = copy.copy(catalog)
    variant.eks_addons = dataclasses.replace(catalog.eks_addons,
                                             offline_az_ids={"us-east-2": ("use2-az2",)},
                                             offline_az_ids_source="test")
    checks, warnings = Problems(), list[Problem]()
    check_offline_zones(checks, pool, variant, warnings)
    (found,) = checks.problems
    assert found.where.endswith("zones[1]") and "use2-az2" in found.message
    assert warnings == []


# -- at deploy: the account's own mapping ------------------------------------------------------

def _account(offline: frozenset[str] = frozenset({"apne1-az3"})) -> AccountZones:
    # an account created before apne1-az3 closed: its ap-northeast-1b is apne1-az3
    return AccountZones(names=("ap-northeast-1a", "ap-northeast-1b", "ap-northeast-1c",
                               "ap-northeast-1d"),
                        zone_ids=("apne1-az4", "apne1-az3", "apne1-az1", "apne1-az2"),
                        offline_ids=offline)


def test_deploy_refuses_a_pool_zone_the_account_maps_to_the_closed_id() -> None:
    with pytest.raises(InputError) as err:
        cluster_zones("ap-northeast-1", ["ap-northeast-1b"], _account())
    assert "ap-northeast-1b (apne1-az3)" in err.value.message
    assert "ap-northeast-1b" not in err.value.hint.split("(")[-1]


def test_own_deploy_keeps_the_control_plane_and_system_pool_off_it() -> None:
    zones = cluster_zones("ap-northeast-1", ["ap-northeast-1a"], _account())
    assert zones.control_plane == ["ap-northeast-1a", "ap-northeast-1c"]
    assert zones.system == ["ap-northeast-1a", "ap-northeast-1c"]
    # without the catalog's fact, the first two zones would have been a and b
    assert cluster_zones("ap-northeast-1", [], _account(frozenset())).system == [
        "ap-northeast-1a", "ap-northeast-1b"]


def test_own_the_offline_plan_of_a_tokyo_stack_refuses_no_zone(tmp_path: Any) -> None:
    """The offline plan answers the zones lookup with the uniform mapping (no account to ask):
    in ap-northeast-1 that would make ap-northeast-1c apne1-az3. It must not refuse on that
    guess: every zone of a Tokyo pool plans."""
    import json

    from components.engine.plan import run_plan

    for zone in ("ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"):
        spec = copy.deepcopy(TOKYO)
        spec["pools"][0]["zone"] = zone
        d = tmp_path / zone
        d.mkdir()
        path = d / "Pulumi.tokyo.yaml"
        path.write_text(json.dumps({"config": {"accelfleet:fleet": spec}}))
        assert run_plan(path).resources
