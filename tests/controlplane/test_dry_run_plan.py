"""Every Kubernetes object the offline plan creates (components/engine: Pulumi's mocks record
each resource with its inputs) for the example stack and for a TPU + Kueue routing stack
(tests/controlplane/stacks/Pulumi.tpurouting.yaml), and for one with every name at the longest
validate takes (Pulumi.longnames.yaml), is accepted by the real API server:
server-side dry-run, strict fields, with the Kueue v0.19.2 and JobSet v0.12.0 CRDs installed.
One test per object. Left out, with why: `tests.controlplane._dry_run.SKIPPED_KINDS` (Helm
releases; GKE multi-networking's kinds, whose CRDs only GKE has)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from tests.controlplane._dry_run import (
    SKIPPED_KINDS,
    STACKS,
    Made,
    dry_run,
    enabled,
    ensure_namespaces,
    namespaces_of,
    params,
    plan_objects,
    planned_types,
    plural_of,
    refusal,
)
from tests.controlplane._plane import ControlPlane
from tests.controlplane._rest import Rest, RestError

pytestmark = pytest.mark.controlplane


@pytest.fixture(scope="module")
def rest(control_plane: ControlPlane) -> Iterator[Rest]:
    out = Rest(control_plane.client())
    made = tuple(m for s in STACKS for m in plan_objects(s))
    ensure_namespaces(out, namespaces_of(made))
    yield out


@pytest.mark.parametrize("made", [p for s in STACKS for p in params(plan_objects, s)])
def test_the_api_server_accepts_each_planned_object(rest: Rest, made: Made) -> None:
    try:
        got = dry_run(rest, made.body)
    except RestError as exc:
        pytest.fail(f"{made.id} refused by the API server: {refusal(exc)}")
    assert got["kind"] == made.body["kind"]
    assert got["metadata"]["name"] == made.body["metadata"]["name"]


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_every_planned_kind_is_dry_run_or_skipped_with_a_reason(
        control_plane: ControlPlane, stack: str) -> None:
    """A kind the plan starts to make is dry-run (it has a plural) or named in
    SKIPPED_KINDS with why, never dropped unseen."""
    assert enabled()
    for kind in planned_types(stack):
        if kind in SKIPPED_KINDS:
            continue
        plural_of({"kind": kind.rsplit(":", 1)[-1]})
    seen = {m.body["kind"] for m in plan_objects(stack)}
    assert {"Namespace", "ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort",
            "WorkloadPriorityClass", "Role", "RoleBinding", "Deployment"} <= seen
    if stack == "tpurouting":
        assert {"ProvisioningRequestConfig", "AdmissionCheck"} <= seen


@pytest.mark.parametrize("change, says", [
    # strict field validation: a field the kind does not have
    (lambda o: o["spec"].__setitem__("queueingStrategy2", "x"), "unknown field"),
    # the CRD's schema: an enum value Kueue does not take
    (lambda o: o["spec"].__setitem__("queueingStrategy", "Fastest"), "Unsupported value"),
    # metadata: a label value past 63
    (lambda o: o["metadata"]["labels"].__setitem__("accelfleet.io/team", "t" * 64),
     "must be no more than 63"),
])
def test_the_dry_run_refuses_what_the_server_would(rest: Rest, change: Any, says: str) -> None:
    """The harness bites: the example's ClusterQueue, broken three ways, is refused."""
    queue = next(m for m in plan_objects("example") if m.body["kind"] == "ClusterQueue")
    body = copy.deepcopy(queue.body)
    change(body)
    with pytest.raises(RestError) as refused:
        dry_run(rest, body)
    assert refused.value.status in (400, 422)
    assert says in refusal(refused.value)
