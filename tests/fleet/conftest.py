from __future__ import annotations

import copy
from typing import Any

import pytest

from fleet.errors import Problem, SpecError, Where
from fleet.rules.validate import validate_fleet

BASE: dict[str, Any] = {
    "clouds": {
        "gcp": {"project": "acme-ml-prod", "region": "us-central1"},
        "aws": {"account": "123456789012", "region": "us-east-1"},
    },
    "clusters": [{"name": "gke", "cloud": "gcp"}, {"name": "eks", "cloud": "aws"}],
    # No budget: a budgeted team's pool with no price is an error (fleet.pricing), and tests of
    # other rules use machines the catalog has no price for; budget tests set their own.
    "teams": [{"name": "research"}],
    "pools": [
        {"name": "h100", "cluster": "gke", "team": "research", "accelerator": "a3-highgpu-8g",
         "nodes": 2, "zone": "us-central1-a"},
    ],
}


@pytest.fixture
def spec() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def pool(**fields: Any) -> dict[str, Any]:
    base = {"name": "p", "cluster": "gke", "team": "research", "accelerator": "a3-highgpu-8g",
            "nodes": 1, "zone": "us-central1-a"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def problems(spec: dict[str, Any]) -> list[Problem]:
    """Every problem of an invalid spec (bad input: exit 2)."""
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    assert err.value.exit_code == 2
    # every problem keeps its location as parts (`fleet validate --json` reads them, issue 22)
    plain = [p.where for p in err.value.problems if not isinstance(p.where, Where)]
    assert plain == [], f"problems with a plain-text where: {plain}"
    return list(err.value.problems)


def only(spec: dict[str, Any], where: str) -> Problem:
    """The first problem whose place starts with `where` (there must be one)."""
    found = [p for p in problems(spec) if p.where.startswith(where)]
    assert found, f"no problem at {where}: {problems(spec)}"
    return found[0]
