"""Malformed specs always end in an AccelfleetError, never another exception."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet import validate_fleet
from fleet.errors import AccelfleetError
from tests.fleet.conftest import BASE

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10_000), st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["v5p", "v5p-128", "4x4x4", "a3-highgpu-8g", "p5.48xlarge", "spot",
                     "us-central1-a", "gke", "eks", "research", "compact", "tpu-vm", "2x2x1"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=10), inner, max_size=3),
    ),
    max_leaves=8,
)
FIELDS = ["name", "team", "accelerator", "cluster", "runtime", "topology", "nodes", "zone",
          "zones", "capacity", "driver", "ami", "labels", "taints", "autoscaling", "placement",
          "multislice", "fabric", "disk_size_gb", "gate"]


def _try(spec: Any) -> None:
    try:
        validate_fleet(spec)
    except AccelfleetError as exc:
        assert str(exc)  # a message for people
        assert exc.exit_code == 2


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(FIELDS), value=values)
def test_any_pool_field_value(field: str, value: Any) -> None:
    spec = copy.deepcopy(BASE)
    spec["pools"][0][field] = value
    if field == "zone":
        spec["pools"][0].pop("zones", None)
    _try(spec)


@settings(max_examples=100, deadline=None)
@given(top=st.sampled_from(["clouds", "clusters", "teams", "pools", "smoke", "gate", "extra"]),
       value=values)
def test_any_top_level_value(top: str, value: Any) -> None:
    spec = copy.deepcopy(BASE)
    spec[top] = value
    _try(spec)


@settings(max_examples=60, deadline=None)
@given(value=values)
def test_any_document(value: Any) -> None:
    _try(value)
