"""Issue 36: a per-pool upgrade policy (`upgrade`), checked against the providers' schemas
(GKE upgrade_settings, EKS update_config: fleet.spec._upgrade, fleet.rules.upgrade), with
defaults that suit gated accelerator pools (fleet.upgrade): surge 1 / unavailable 0 where
capacity exists, max_surge 0 / max_unavailable 1 on a reservation or a TPU slice, GKE's own
short-lived upgrade on flex-start, one node at a time on EKS (MINIMAL on a reservation)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleet.errors import SpecError
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import BASE, pool, problems


def _spec(**fields: Any) -> dict[str, Any]:
    spec = {**BASE, "pools": [pool(name="p", **fields)]}
    return spec


def _policy(**fields: Any) -> Any:
    (p,) = validate_fleet(_spec(**fields)).pools
    return p.upgrade


def _refused(**fields: Any) -> list[str]:
    return [f"{p.where}: {p.message}" for p in problems(_spec(**fields))]


def _warned(**fields: Any) -> list[str]:
    return [f"{w.where}: {w.message}" for w in validate_fleet(_spec(**fields)).warnings
            if "upgrade" in w.where]


# -- defaults ----------------------------------------------------------------------------------

def test_gke_default_is_one_surge_node_none_unavailable() -> None:
    up = _policy()
    assert (up.strategy, up.max_surge, up.max_unavailable) == ("surge", 1, 0)
    assert up.words == "surge 1, unavailable 0" and not up.declared


def test_gke_reservation_default_takes_no_surge() -> None:
    up = _policy(capacity={"reservation": "r1"})
    assert (up.max_surge, up.max_unavailable) == (0, 1)


def test_gke_tpu_slice_default_takes_no_surge() -> None:
    up = _policy(accelerator="v6e 4x4", nodes=None, zone="us-central1-b")
    assert (up.max_surge, up.max_unavailable) == (0, 1)


def test_gke_flex_start_is_gkes_short_lived_upgrade() -> None:
    spec = _spec(accelerator="a3-highgpu-8g", capacity="flex-start")
    spec["clusters"] = [{"name": "gke", "cloud": "gcp", "kubernetes_version": "1.34"},
                        BASE["clusters"][1]]
    (p,) = validate_fleet(spec).pools
    assert p.upgrade.strategy == "short-lived"


def test_eks_default_one_node_at_a_time_and_minimal_on_a_reservation() -> None:
    up = _policy(cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a")
    assert (up.strategy, up.max_unavailable, up.max_surge) == ("surge", 1, None)
    up = _policy(cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a",
                 capacity={"reservation": "cr-0123456789abcdef0"})
    assert up.strategy == "minimal"


def test_tpu_vm_pool_has_no_policy_and_refuses_one() -> None:
    fields = {"accelerator": "v5e 2x2", "runtime": "tpu-vm", "cluster": None, "nodes": None,
              "zone": "us-central1-a"}
    assert _policy(**fields) is None
    assert any("upgrade" in r and "tpu-vm" in r
               for r in _refused(**fields, upgrade={"max_unavailable": 1}))


# -- refusals (the providers' schemas) ---------------------------------------------------------

@pytest.mark.parametrize(("fields", "words"), [
    ({"max_surge": 0, "max_unavailable": 0}, "no node would ever be upgraded"),
    ({"max_unavailable_percent": 10}, "count of nodes, not a share"),
])
def test_gke_refusals(fields: dict[str, Any], words: str) -> None:
    assert any(words in r for r in _refused(upgrade=fields))


@pytest.mark.parametrize(("fields", "words"), [
    ({"max_surge": 1}, "no surge setting"),
    ({"strategy": "blue-green"}, "no blue-green update"),
    ({"max_unavailable": 0}, "takes 1 to 100"),
    ({"max_unavailable": 101}, "takes 1 to 100"),
])
def test_eks_refusals(fields: dict[str, Any], words: str) -> None:
    found = _refused(cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a",
                     upgrade=fields)
    assert any(words in r for r in found), found


@pytest.mark.parametrize(("fields", "words"), [
    ({"max_unavailable": 1, "max_unavailable_percent": 10}, "exactly one"),
    ({"blue_green": {"batch_nodes": 1}}, "without `strategy: blue-green`"),
    ({"strategy": "blue-green", "max_surge": 1}, "surge settings"),
    ({"strategy": "blue-green", "blue_green": {"batch_nodes": 1, "batch_percent": 10}},
     "one batch size"),
    ({"strategy": "minimal", "max_surge": 2}, "takes no `max_surge`"),
    ({"max_unavailable_percent": 0}, "is at least 1"),
    ({"max_surge": -1}, "is at least 0"),
])
def test_field_refusals(fields: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecError) as err:
        validate_fleet(_spec(upgrade=fields))
    assert words in str(err.value), str(err.value)


def test_gke_flex_start_refuses_a_policy() -> None:
    spec = _spec(capacity="flex-start", upgrade={"max_unavailable": 1})
    spec["clusters"] = [{"name": "gke", "cloud": "gcp", "kubernetes_version": "1.34"},
                        BASE["clusters"][1]]
    assert any("short-lived" in p.message for p in problems(spec))


# -- warnings (what the cloud takes but cannot work as written) ---------------------------------

def test_gke_surge_on_a_reservation_warns() -> None:
    found = _warned(capacity={"reservation": "r1"}, upgrade={"max_surge": 1})
    assert any("max_surge 1 on a reservation" in w for w in found), found


def test_gke_blue_green_on_a_tpu_slice_warns() -> None:
    found = _warned(accelerator="v6e 4x4", nodes=None, zone="us-central1-b",
                    upgrade={"strategy": "blue-green"})
    assert any("second pool of 4 node(s)" in w for w in found), found


def test_gke_more_than_twenty_at_once_warns() -> None:
    assert any("at most 20" in w for w in _warned(upgrade={"max_surge": 15,
                                                           "max_unavailable": 10}))


def test_eks_surge_on_a_reservation_warns() -> None:
    found = _warned(cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a",
                    capacity={"reservation": "cr-0123456789abcdef0"},
                    upgrade={"strategy": "surge"})
    assert any("reservation" in w for w in found), found


def test_system_pool_takes_a_policy_and_is_checked_there() -> None:
    spec = _spec()
    spec["clusters"] = [{"name": "gke", "cloud": "gcp",
                         "system_pool": {"upgrade": {"max_surge": 0, "max_unavailable": 0}}},
                        BASE["clusters"][1]]
    (found,) = [p for p in problems(spec) if "system_pool.upgrade" in p.where]
    assert "no node would ever be upgraded" in found.message


# -- the rule, generated -----------------------------------------------------------------------

_COUNT = st.one_of(st.none(), st.integers(min_value=0, max_value=120))
_PCT = st.one_of(st.none(), st.integers(min_value=1, max_value=100))


@settings(max_examples=40, deadline=None)
@given(_COUNT, _COUNT, _PCT, st.sampled_from(["gke", "eks"]))
def test_property_an_accepted_policy_is_one_the_provider_takes(
        surge: int | None, unavailable: int | None, percent: int | None, where: str) -> None:
    fields = {"max_surge": surge, "max_unavailable": unavailable,
              "max_unavailable_percent": percent}
    upgrade = {k: v for k, v in fields.items() if v is not None}
    place = ({} if where == "gke" else
             {"cluster": "eks", "accelerator": "p5.48xlarge", "zone": "us-east-1a"})
    try:
        fleet = validate_fleet(_spec(**place, upgrade=upgrade))
    except SpecError:
        return
    (p,) = fleet.pools
    up = p.upgrade
    if where == "gke":
        # google_container_node_pool upgrade_settings: both >= 0, at least one node at a time
        assert percent is None and up.max_surge >= 0 and up.max_unavailable >= 0
        assert up.max_surge + up.max_unavailable >= 1
    else:
        # aws_eks_node_group update_config: exactly one of the two, 1..100; no surge
        assert surge is None and up.max_surge is None
        assert (up.max_unavailable is None) != (up.max_unavailable_percent is None)
        value = up.max_unavailable if up.max_unavailable is not None \
            else up.max_unavailable_percent
        assert 1 <= value <= 100
