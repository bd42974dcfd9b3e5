"""Issue 35, deployable as shipped: the stack's `gate.image_pull_secrets` reach the real API
server where Kubernetes reads them. The controller's Deployment (its pod template's
`imagePullSecrets`, its `--image-pull-secret` arguments), its PriorityClass and its
PodDisruptionBudget, and every object a gate proof creates with the Secrets (a Job of a GPU
pool, a multi-host TPU slice's JobSet, a re-proof through a team's Kueue queue, a fabric pool's
pair round) are accepted by the real kube-apiserver: server-side dry-run, strict fields, the
Kueue and JobSet CRDs installed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from components.k8s._gate import GateControllerArgs, gate_objects
from smoke.gate._pull import pod_specs
from tests.controlplane._dry_run import (
    RUN_ID_WORST,
    STACKS,
    Made,
    dry_run,
    enabled,
    ensure_namespaces,
    namespaces_of,
    refusal,
)
from tests.controlplane._plane import ControlPlane
from tests.controlplane._rest import Rest, RestError

pytestmark = pytest.mark.controlplane
SECRETS = ("ghcr-pull", "mirror.example.com-pull")


def _proofs() -> tuple[Made, ...]:
    """A first proof and a re-proof of every gated pool of the stacks, with SECRETS, and the
    pair round a fabric pool's Job makes."""
    from smoke.cluster._pairs import pair_objects
    from smoke.cluster.sources import load_source
    from smoke.gate._proof import Unit, render

    out = []
    for stack in ("example", "tpurouting"):
        source = load_source(STACKS[stack], None)
        for pool in source.inventory.pools:
            if pool.gate is None or not pool.gate.enabled or pool.kind not in ("gpu", "tpu"):
                continue
            per_slice = pool.nodes // max(pool.slices, 1)
            hosts = tuple(f"{pool.name}-h{i}" for i in range(max(per_slice, 1)))
            first = Unit(pool.name, hosts, slice=pool.name if per_slice > 1 else "")
            for what, unit in (("first", first), ("reproof", replace(first, reproof=True))):
                rendered = render(source.inventory, pool, unit, run_id=RUN_ID_WORST,
                                  namespace=source.settings.namespace,
                                  tier=pool.gate.max_tier, timeout_s=600, images={},
                                  pull_secrets=SECRETS)
                for w in rendered.pools:
                    for obj in w.objects:
                        out.append(Made(f"{stack}:proof-{pool.name}-{what}", obj))
                    if w.kind == "job" and any(o.get("kind") == "Service" for o in w.objects):
                        for obj in pair_objects(w, f"{w.name}-r0p0", (hosts[0], "peer")):
                            out.append(Made(f"{stack}:pair-{pool.name}", obj))
    return tuple(out)


def _controller() -> tuple[Made, ...]:
    args = GateControllerArgs(cluster="ml-gke", namespace="accelfleet-pull",
                              inventory={"pools": []}, image_pull_secrets=SECRETS)
    return tuple(Made("controller", o) for o in gate_objects(args))


@pytest.fixture(scope="module")
def rest(control_plane: ControlPlane) -> Iterator[Rest]:
    out = Rest(control_plane.client())
    ensure_namespaces(out, namespaces_of(_proofs() + _controller()))
    yield out


def _accepted(rest: Rest, made: Made) -> dict[str, Any]:
    try:
        return dry_run(rest, made.body)
    except RestError as exc:
        pytest.fail(f"{made.id} refused by the API server: {refusal(exc)}")


def test_every_proof_object_with_the_secrets_is_accepted(rest: Rest) -> None:
    assert enabled()
    proofs = _proofs()
    kinds = {m.body["kind"] for m in proofs}
    assert {"Job", "JobSet"} <= kinds
    assert any(m.source.startswith("example:pair-") for m in proofs)  # a fabric pool's pair
    assert any(m.source.endswith("-reproof") and "kueue.x-k8s.io/queue-name" in
               m.body["metadata"].get("labels", {}) for m in proofs)  # through a team queue
    pods = 0
    for made in proofs:
        got = _accepted(rest, made)
        for spec in pod_specs(got):  # as the server stored it
            assert [s["name"] for s in spec["imagePullSecrets"]] == list(SECRETS), made.id
            pods += 1
    assert pods >= len([m for m in proofs if m.body["kind"] in ("Job", "JobSet")])


def test_the_controller_its_priority_class_and_budget_are_accepted(rest: Rest) -> None:
    made = {m.body["kind"]: m for m in _controller()}
    deployment = _accepted(rest, made["Deployment"])
    pod = deployment["spec"]["template"]["spec"]
    assert [s["name"] for s in pod["imagePullSecrets"]] == list(SECRETS)
    assert pod["priorityClassName"] == "accelfleet-gate"
    args = pod["containers"][0]["args"]
    assert [args[i + 1] for i, a in enumerate(args) if a == "--image-pull-secret"] == \
        list(SECRETS)
    budget = _accepted(rest, made["PodDisruptionBudget"])
    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert budget["spec"]["selector"] == deployment["spec"]["selector"]
    priority = _accepted(rest, made["PriorityClass"])
    assert priority["value"] == 100_000_000 and priority["preemptionPolicy"] == \
        "PreemptLowerPriority"


def test_the_priority_class_is_refused_past_the_user_ceiling(rest: Rest) -> None:
    """The ceiling the value is chosen under is the server's: 1,000,000,000 is the most a
    class of ours may have (the system classes sit at 2e9)."""
    body = dict(next(m.body for m in _controller() if m.body["kind"] == "PriorityClass"))
    body["metadata"] = {**body["metadata"], "name": "accelfleet-gate-ceiling"}
    assert _accepted(rest, Made("ceiling", {**body, "value": 1_000_000_000}))
    with pytest.raises(RestError) as exc:
        dry_run(rest, {**body, "value": 1_000_000_001})
    assert exc.value.status == 422
