"""Every manifest `accelfleet smoke render` writes (the GPU Jobs with their headless Services,
the TPU JobSets, single- and multi-host, multislice; the shared Namespace and ConfigMap), the
pair rounds the launcher makes of a fabric pool, and every object a gate proof creates (first
proof of a node, a batch, a fabric node with its proven peer, a slice as a unit, a re-proof
through the pool's Kueue queue with the gate's priority class) are accepted by the real API
server: server-side dry-run, strict fields, the Kueue and JobSet CRDs installed. One test per
object, at the run id `smoke render` writes with and at the longest the launcher makes.

JobSet's webhook does not run here: its name rules (the generated Job, pod and subdomain
names within 63) are the project's own check (`fleet.k8s_names`, kubernetes-sigs/jobset
v0.12.0 pkg/webhooks/jobset_webhook.go), asserted below on the same objects."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.controlplane._dry_run import (
    RUN_ID_RENDER,
    RUN_ID_WORST,
    STACKS,
    Made,
    dry_run,
    ensure_namespaces,
    namespaces_of,
    params,
    proof_objects,
    refusal,
    render_objects,
)
from tests.controlplane._plane import ControlPlane
from tests.controlplane._rest import Rest, RestError

pytestmark = pytest.mark.controlplane
RUN_IDS = (RUN_ID_RENDER, RUN_ID_WORST)


@pytest.fixture(scope="module")
def rest(control_plane: ControlPlane) -> Iterator[Rest]:
    out = Rest(control_plane.client())
    made = tuple(m for s in STACKS for r in RUN_IDS for m in render_objects(s, r)) + \
        tuple(m for s in STACKS for m in proof_objects(s))
    ensure_namespaces(out, namespaces_of(made))
    yield out


def _accepted(rest: Rest, made: Made) -> None:
    try:
        got = dry_run(rest, made.body)
    except RestError as exc:
        pytest.fail(f"{made.id} refused by the API server: {refusal(exc)}")
    assert got["kind"] == made.body["kind"]


@pytest.mark.parametrize("made", [p for s in sorted(STACKS) for r in RUN_IDS
                                  for p in params(render_objects, s, r)])
def test_the_api_server_accepts_each_rendered_manifest(rest: Rest, made: Made) -> None:
    _accepted(rest, made)


@pytest.mark.parametrize("made", [p for s in sorted(STACKS) for p in params(proof_objects, s)])
def test_the_api_server_accepts_each_object_of_a_gate_proof(rest: Rest, made: Made) -> None:
    _accepted(rest, made)
