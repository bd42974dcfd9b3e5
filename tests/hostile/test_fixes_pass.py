"""Item 5 (part): a fix offered must pass. An EFA pool across two zones was told "set
`placement: none`", which the EFA rule then refused; now the fix it names validates."""

from __future__ import annotations

import copy

import pytest

from fleet import validate_fleet
from fleet.errors import SpecError
from tests.fleet.test_hostile_corpus import BASE


def test_the_fix_for_an_efa_pool_across_zones_passes() -> None:
    fleet = copy.deepcopy(BASE)
    fleet["pools"] = [{"name": "p5", "cluster": "eks", "team": "research",
                       "accelerator": "p5.48xlarge", "nodes": 2,
                       "zones": ["us-east-1a", "us-east-1b"]}]
    with pytest.raises(SpecError) as err:
        validate_fleet(fleet)
    [problem] = [p for p in err.value.problems if p.where.endswith(".placement")]
    assert "`fabric: off` and `placement: none`" in problem.hint
    fleet["pools"][0].update({"fabric": "off", "placement": "none"})
    validate_fleet(fleet)  # the fix as offered passes
    one = copy.deepcopy(fleet)
    one["pools"][0].update({"zones": ["us-east-1a"]})
    del one["pools"][0]["fabric"], one["pools"][0]["placement"]
    validate_fleet(one)  # and so does the other: one zone
