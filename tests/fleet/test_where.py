"""A problem's location as parts (fleet.errors.Where): `fleet validate --json` reads the
section, item and field off them, never off the text (issue 22)."""

from __future__ import annotations

import pickle

from fleet.errors import Problem, Where
from fleet.spec.errors import record, where_of


def test_the_text_is_what_people_read() -> None:
    at = Where("pools", name="h100").dot("zones").item(0)
    assert at == "pools 'h100'.zones[0]"
    assert (at.section, at.position, at.name, at.field) == ("pools", None, "h100", "zones[0]")
    assert Where("pools").item(2) == "pools[2]" and Where("pools").item(2).position == 2
    assert Where("routing", field="teams[0]").dot("prefer[1]") == "routing.teams[0].prefer[1]"
    assert pickle.loads(pickle.dumps(at)).field == "zones[0]"


def test_a_record_reads_the_parts_not_the_text() -> None:
    """A name with an apostrophe renders in double quotes (Python's repr), which the regex that
    once parsed the text back did not match: the record named no section and no team."""
    raw = {"teams": [{"name": "o'neil", "monthly_budget_usd": 5}]}
    p = Problem(Where("teams", name="o'neil", field="monthly_budget_usd"), "over budget")
    r = record(p, raw)
    assert r["where"] == "teams \"o'neil\".monthly_budget_usd"
    assert (r["section"], r["name"], r["field"], r["value"]) == (
        "teams", "o'neil", "monthly_budget_usd", 5)


def test_pydantic_locations_become_parts() -> None:
    raw = {"pools": [{"name": "a"}, {"name": "b", "zones": ["x"]}], "clouds": {"gcp": {}}}
    at = where_of(("pools", 1, "zones", 0), raw)
    assert at == "pools[1] 'b'.zones[0]" and (at.position, at.name, at.field) == (1, "b",
                                                                                   "zones[0]")
    assert where_of(("clouds", "gcp", "region"), raw) == "clouds.gcp.region"
    assert where_of((), raw) == "spec"
    r = record(Problem(at, "m"), raw)
    assert (r["pool"], r["field"], r["value"]) == ("b", "zones[0]", "x")


def test_removing_a_pool_that_routing_prefers_names_the_team_and_entry() -> None:
    """fleet.requests reads the routing entry's team and position off the Where's steps (it
    once matched the text with a regex)."""
    import copy

    import pytest

    from fleet.catalog import load_catalog
    from fleet.errors import RequestRefused
    from fleet.requests.request import remove_pool
    from tests.fleet.conftest import BASE, pool

    raw = copy.deepcopy(BASE)
    raw["pools"] = [pool(name="train-a", nodes=1), pool(name="train-b", nodes=1)]
    raw["routing"] = {"teams": [{"team": "research", "prefer": ["train-b", "train-a"]}]}
    with pytest.raises(RequestRefused) as err:
        remove_pool(raw, "train-a", catalog=load_catalog())
    [problem] = err.value.problems
    assert problem.where == "routing.teams[0].prefer[1]"
    assert problem.message == ("team research's routing `prefer` list names pool train-a (entry 2)"
                               ": Kueue would route its jobs to a pool that is gone")
    assert problem.hint == ("remove 'train-a' from routing.teams[0].prefer first (team research), "
                            "then remove the pool")
