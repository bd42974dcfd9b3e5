"""Pool requests as decisions (fleet.requests.request): what a request becomes on the example
fleet, and every refusal naming why and the variants that pass every rule; resize and removal;
the request metadata a pool carries and the expired-pool warnings of `fleet validate`."""

from __future__ import annotations

import copy
from datetime import date, timedelta
from typing import Any

import pytest

from fleet.catalog import load_catalog
from fleet.errors import InputError, RequestRefused, SpecError
from fleet.requests.request import PoolRequest, parse_until, remove_pool, request_pool, resize_pool
from fleet.rules.validate import validate_fleet
from fleet.stack.read import EXAMPLE_STACK, read_stack_file

TODAY = date(2026, 11, 23)
CAT = load_catalog()


@pytest.fixture
def raw() -> dict[str, Any]:
    return read_stack_file(EXAMPLE_STACK)


def ask(raw: dict[str, Any], **fields: Any) -> Any:
    return request_pool(raw, PoolRequest(**fields), catalog=CAT, today=TODAY)


def refused(call: Any, *args: Any, **kwargs: Any) -> RequestRefused:
    with pytest.raises(RequestRefused) as exc:
        call(*args, **kwargs)
    return exc.value


def test_a_v6e_slice_for_vision_lands_in_the_zone_of_its_other_v6e(raw: dict[str, Any]) -> None:
    before = copy.deepcopy(raw)
    change = ask(raw, team="vision", accelerator="v6e 2x4", reason="ViT eval",
                 requested_by="ana@acme.com", expires=date(2027, 1, 31))
    assert raw == before  # pure: the input is not touched
    assert change.entry == {"name": "vision-v6e-2x4", "cluster": "ml-gke", "team": "vision",
                            "accelerator": "v6e", "topology": "2x4", "zone": "us-central1-b",
                            "requested_by": "ana@acme.com", "reason": "ViT eval",
                            "expires": "2027-01-31"}
    pool = change.pool
    assert (pool.node_count, pool.devices, pool.shape.multi_host) == (2, 8, True)
    s = change.summary()
    per_chip = CAT.price(pool.shape).on_demand_usd  # the v6e list price per chip-hour
    assert per_chip and s["pool"]["monthly_usd"] == round(8 * per_chip * 730, 2)
    team = s["team"]
    assert team["left_after_usd"] == round(150_000 - team["max_monthly_usd_after"], 2)
    assert team["max_monthly_usd_after"] == round(team["max_monthly_usd_before"]
                                                  + s["pool"]["max_monthly_usd"], 2)
    assert validate_fleet(change.spec).pools[-1].name == "vision-v6e-2x4"


def test_a_gpu_on_the_other_cloud_goes_to_its_cluster_and_a_free_name(raw: dict[str, Any]
                                                                      ) -> None:
    change = ask(raw, team="research", accelerator="p5.48xlarge", capacity="spot")
    assert change.entry["cluster"] == "ml-eks" and change.entry["zone"] == "us-east-1a"
    assert change.entry["name"] == "research-p5-48xlarge" and change.entry["nodes"] == 1
    assert change.entry["capacity"] == "spot"
    assert any("per account" in n for n in change.notes)  # us-east-1 codes: not checkable
    again = ask(change.spec, team="research", accelerator="p5.48xlarge", capacity="spot")
    assert again.entry["name"] == "research-p5-48xlarge-2"


def test_unknown_accelerator_is_refused_with_did_you_mean(raw: dict[str, Any]) -> None:
    err = refused(ask, raw, team="vision", accelerator="h1000")
    assert "did you mean 'h100'" in str(err) and "--accelerator h100" in err.alternatives


def test_zone_without_the_accelerator_names_the_zones_that_work(raw: dict[str, Any]) -> None:
    err = refused(ask, raw, team="vision", accelerator="v6e 2x4", zone="us-central1-f")
    assert "us-central1-f does not offer TPU v6e" in str(err)
    assert [a.split()[1] for a in err.alternatives] == ["us-central1-a", "us-central1-b",
                                                         "us-central1-c"]


def test_over_budget_offers_spot_a_smaller_pool_and_the_budget_left(raw: dict[str, Any]
                                                                    ) -> None:
    err = refused(ask, raw, team="vision", accelerator="a3-highgpu-8g", nodes=4)
    assert "over its budget of $150,000" in str(err)
    kinds = [a.split()[0] for a in err.alternatives]
    assert kinds[:2] == ["--capacity", "--nodes"] and "remaining budget" in err.alternatives[-1]
    nodes = int(err.alternatives[1].split()[1])
    ask(raw, team="vision", accelerator="a3-highgpu-8g", nodes=nodes)  # it does pass
    with pytest.raises(RequestRefused):
        ask(raw, team="vision", accelerator="a3-highgpu-8g", nodes=nodes + 1)  # the largest
    ask(raw, team="vision", accelerator="a3-highgpu-8g", nodes=4, capacity="spot")


def test_a_slice_over_budget_offers_the_largest_smaller_one_that_fits(raw: dict[str, Any]
                                                                     ) -> None:
    err = refused(ask, raw, team="vision", accelerator="v6e 16x16")
    smaller = next(a for a in err.alternatives if a.startswith("--topology"))
    assert smaller.startswith("--topology 8x8 (64 chips")


def test_invalid_topology_names_the_valid_ones(raw: dict[str, Any]) -> None:
    err = refused(ask, raw, team="vision", accelerator="v6e", topology="3x3")
    assert "valid v6e topologies" in str(err) and "--topology 2x4" in err.alternatives


def test_a_taken_name_is_refused_with_a_free_one(raw: dict[str, Any]) -> None:
    err = refused(ask, raw, team="vision", accelerator="v6e 2x4", name="l4-spot")
    assert "already has a pool named 'l4-spot'" in str(err)
    assert err.alternatives == ("--name l4-spot-2",)


@pytest.mark.parametrize(("fields", "says"), [
    ({"team": "vison"}, "did you mean 'vision'"),
    ({"expires": TODAY - timedelta(days=1)}, "in the past"),
    ({"capacity": "spots"}, "is not a capacity"),
    ({"cluster": "ml-gk"}, "did you mean 'ml-gke'"),
    ({"accelerator": "v6e 2x4", "nodes": 3}, "follow from its topology"),
])
def test_bad_requests_are_refused_naming_the_fix(raw: dict[str, Any], fields: dict[str, Any],
                                                 says: str) -> None:
    err = refused(ask, raw, **{"team": "vision", "accelerator": "a2-highgpu-1g", **fields})
    assert says in str(err) and err.exit_code == 2


def test_an_invalid_stack_is_refused_as_it_is(raw: dict[str, Any]) -> None:
    raw["pools"][0]["zone"] = "us-central1-q"
    err = refused(ask, raw, team="vision", accelerator="v6e 2x4")
    assert "invalid before this change" in str(err) and "us-central1-q" in str(err)


def test_resize_sets_nodes_and_a_slice_changes_topology_never_nodes(raw: dict[str, Any]
                                                                    ) -> None:
    change = resize_pool(raw, "h100-train", nodes=1, catalog=CAT)
    assert change.updates == {"nodes": 1} and change.pool.node_count == 1
    assert resize_pool(raw, "h100-train", nodes=2, catalog=CAT).changes_nothing
    err = refused(resize_pool, raw, "v5p-slice", nodes=32, catalog=CAT)
    assert "changes topology, never node count" in str(err) and "--topology" in str(err)
    assert err.alternatives == ("--topology 4x4x8",)  # the slice of 32 hosts
    slice_ = resize_pool(raw, "v5p-slice", topology="2x4x4", catalog=CAT)  # 16 hosts to 8
    assert slice_.updates == {"accelerator": "v5p", "topology": "2x4x4"}
    assert slice_.pool.shape.hosts == 8
    err = refused(resize_pool, raw, "v6e-serve", topology="2x4", catalog=CAT)  # costs more
    assert "raises v6e-serve's cost from about $7,884" in str(err) and "--reason" in str(err)
    single = resize_pool(raw, "v6e-serve", topology="2x4", catalog=CAT,  # "v6e 2x2" written
                         reason="INC-7: serving load")
    assert single.updates == {"accelerator": "v6e", "topology": "2x4",
                              "reason": "INC-7: serving load"}
    assert single.pool.spec.reason == "INC-7: serving load"
    err = refused(resize_pool, raw, "h100-train", topology="2x2", catalog=CAT)
    assert "only TPU slices take a topology" in str(err)


def test_resize_over_budget_is_refused_with_what_fits(raw: dict[str, Any]) -> None:
    err = refused(resize_pool, raw, "v5p-slice", topology="4x4x8", catalog=CAT)
    assert "over its budget" in str(err) and "remaining budget" in err.alternatives[-1]
    err = refused(resize_pool, raw, "nope", nodes=1, catalog=CAT)
    assert "unknown pool 'nope'" in str(err)


def test_remove_gives_the_pool_back(raw: dict[str, Any]) -> None:
    change = remove_pool(raw, "g6-ci", catalog=CAT)
    assert "g6-ci" not in {p["name"] for p in change.spec["pools"]}
    assert change.pool.name == "g6-ci"
    s = change.summary()
    assert s["team"]["max_monthly_usd_after"] < s["team"]["max_monthly_usd_before"]


def test_until_takes_a_date_or_a_span() -> None:
    assert parse_until("2027-01-31", TODAY) == date(2027, 1, 31)
    assert parse_until("30d", TODAY) == TODAY + timedelta(days=30)
    assert parse_until("8w", TODAY) == TODAY + timedelta(weeks=8)
    for bad in ("tomorrow", "2027-13-01", "31/01/2027"):
        with pytest.raises(InputError, match="YYYY-MM-DD"):
            parse_until(bad, TODAY)


@pytest.mark.parametrize(("field", "value", "says"), [
    ("expires", "next week", "is not a date"),
    ("expires", "2027-02-30", "is not a date"),
    ("expires", "2027-02-03T10:00:00Z", "is not a date"),
    ("reason", "two\nlines", "line break"),
    ("reason", "x" * 501, "over the 500 allowed"),
    ("requested_by", " ", "is empty"),
    ("requested_by", 42, "text"),
])
def test_request_metadata_is_checked_strictly(raw: dict[str, Any], field: str, value: Any,
                                              says: str) -> None:
    raw["pools"][0][field] = value
    with pytest.raises(SpecError) as exc:
        validate_fleet(raw)
    [p] = exc.value.problems
    assert p.where.endswith(f".{field}") and says in p.message and p.hint


def test_an_expired_pool_is_a_warning_with_its_cost(raw: dict[str, Any]) -> None:
    raw["pools"][0].update(expires=date(2020, 1, 31), requested_by="ana@acme.com")
    raw["pools"][1]["expires"] = "2999-12-31"  # quoted: the same date
    raw["pools"][2]["expires"] = "2999-12-31T00:00:00Z"  # a bare date, as Pulumi passes it
    fleet = validate_fleet(raw)
    [w] = [w for w in fleet.warnings if w.where.endswith(".expires")]
    assert w.where == "pools 'h100-train'.expires" and "expired on 2020-01-31" in w.message
    assert "$129,195 a month" in w.message and "ana@acme.com" in w.message
    assert "accelfleet pool remove h100-train" in w.hint
    assert fleet.pools[1].spec.expires == fleet.pools[2].spec.expires == date(2999, 12, 31)


def test_a_refused_gpu_request_offers_the_same_gpu_on_the_other_cloud(raw: dict[str, Any]
                                                                      ) -> None:
    """Issue 21 item 8: the example stack has a GKE and an EKS cluster; an H100 refused on
    one lists the H100 machine of the other (8 GPUs, as asked), in a zone where it passes."""
    err = refused(ask, raw, team="vision", accelerator="h100", zone="us-central1-f")
    other = [a for a in err.alternatives if "--cluster" in a]
    assert other == [next(a for a in other if a.startswith(
        "--accelerator p5.48xlarge --cluster ml-eks --zone us-east-1a (on aws: $"))], other
    ask(raw, team="vision", accelerator="p5.48xlarge", cluster="ml-eks", zone="us-east-1a")
    err = refused(ask, raw, team="vision", accelerator="p5.48xlarge", zone="us-east-1z")
    assert any(a.startswith("--accelerator a3-highgpu-8g --cluster ml-gke --zone "
                            "us-central1-a (on gcp: $") for a in err.alternatives)


def test_no_other_cloud_alternative_that_would_not_pass(raw: dict[str, Any]) -> None:
    """Team research's budget has room for the p5 ($40k) but not the a3 ($65k): no GCP line."""
    err = refused(ask, raw, team="research", accelerator="p5.48xlarge", zone="us-east-1z")
    assert not any("--cluster" in a for a in err.alternatives), err.alternatives
