"""Item 5 (part): messages use the words of the stack reference (docs/stack.md, the README's
until issue 22): a pool written with `zone:` hears about its `zone` (not `zones[0]`), and a
malformed region gets a did-you-mean like an unknown one."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from fleet import validate_fleet
from fleet.errors import SpecError
from tests.fleet.test_hostile_corpus import BASE


def _problems(change: Callable[[dict[str, Any]], None]) -> SpecError:
    fleet = copy.deepcopy(BASE)
    change(fleet)
    with pytest.raises(SpecError) as err:
        validate_fleet(fleet)
    return err.value


def test_a_zone_is_called_zone() -> None:
    err = _problems(lambda f: f["pools"][0].update(zone="us-central1-q"))
    assert err.problems[0].where == "pools 'h100'.zone"
    assert err.records[0]["value"] == "us-central1-q"


def test_a_malformed_region_gets_a_did_you_mean() -> None:
    err = _problems(lambda f: f["clouds"]["gcp"].update(region="us-central"))
    assert "did you mean 'us-central1'" in err.problems[0].message
    assert err.problems[0].hint == "use 'us-central1', e.g. region: us-central1"
