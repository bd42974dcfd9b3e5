"""Each label and taint a stack gives its pools becomes a Node's: the Node of every GKE node
pool and EKS node group of the plans (tests.controlplane._dry_run.STACKS), with the labels and
taints the plan passes the cloud, is accepted by the real API server (dry-run). And any label
and taint `fleet validate` accepts on a pool, of either cloud, is accepted on a Node by the
real server (a property over keys and values: validate is never laxer than Kubernetes)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet import validate_fleet
from fleet.errors import SpecError
from tests.controlplane._dry_run import (
    STACKS,
    Made,
    dry_run,
    node_objects,
    node_of,
    params,
    refusal,
)
from tests.controlplane._plane import ControlPlane
from tests.controlplane._rest import Rest, RestError

pytestmark = pytest.mark.controlplane


@pytest.fixture(scope="module")
def rest(control_plane: ControlPlane) -> Iterator[Rest]:
    yield Rest(control_plane.client())


@pytest.mark.parametrize("made", [p for s in STACKS for p in params(node_objects, s)])
def test_the_api_server_accepts_each_pools_node(rest: Rest, made: Made) -> None:
    try:
        dry_run(rest, made.body)
    except RestError as exc:
        pytest.fail(f"{made.id} refused by the API server: {refusal(exc)}")


BASE: dict[str, Any] = {
    "clouds": {"gcp": {"project": "acme-ml-prod", "region": "us-central1"},
               "aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "gke", "cloud": "gcp", "authorized_cidrs": ["203.0.113.0/24"]},
                 {"name": "eks", "cloud": "aws", "authorized_cidrs": ["203.0.113.0/24"],
                  "network": {"cidr": "10.20.0.0/16"}}],
    "teams": [{"name": "research"}],
}
POOLS = {"gke": {"name": "l4", "cluster": "gke", "team": "research",
                 "accelerator": "g2-standard-24", "nodes": 1, "zone": "us-central1-a"},
         "eks": {"name": "g6", "cluster": "eks", "team": "research",
                 "accelerator": "g6.12xlarge", "nodes": 1, "zone": "us-east-1a"}}
segment = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,66}[A-Za-z0-9])?", fullmatch=True)
prefix = st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,70}[a-z0-9])?", fullmatch=True)
keys = st.one_of(segment, st.builds(lambda p, n: f"{p}/{n}", prefix, segment))
values = st.one_of(st.just(""), segment)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cloud=st.sampled_from(sorted(POOLS)), key=keys, value=values, taint_key=keys,
       taint_value=values)
def test_a_label_or_taint_validate_accepts_is_accepted_on_a_node(
        rest: Rest, cloud: str, key: str, value: str, taint_key: str,
        taint_value: str) -> None:
    spec = copy.deepcopy(BASE)
    spec["pools"] = [{**POOLS[cloud], "labels": {key: value},
                      "taints": [{"key": taint_key, "value": taint_value}]}]
    try:
        fleet = validate_fleet(spec)
    except SpecError:
        return
    (pool,) = fleet.pools
    taints = [{"key": t.key, "value": t.value, "effect": "NO_SCHEDULE"}
              for t in pool.spec.taints]
    try:
        dry_run(rest, node_of("dry-run-labels", dict(pool.labels), taints))
    except RestError as exc:
        pytest.fail(f"validate took labels {pool.labels} and taints {taints} on {cloud}; the "
                    f"API server refuses them: {refusal(exc)}")
