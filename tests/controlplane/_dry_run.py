"""Every Kubernetes object the project creates, gathered for a server-side dry-run on the real
API server (tests/controlplane/test_dry_run_*.py): what the offline plan registers
(components/engine, Pulumi's mocks), what `smoke render` writes and the launcher submits, and
what a gate proof creates.

A dry-run create (`dryRun=All`, `fieldValidation=Strict`) runs the whole server path but
storage: decoding with unknown and duplicate fields refused, defaulting, the kind's validation
(for a custom resource: its CRD's OpenAPI schema and CEL rules), admission. The namespaces
the objects go in exist for real first (a dry-run into a missing namespace is refused with
404); an object that exists already (a namespace made for the others) is checked by a dry-run
server-side apply instead, which validates the same object as an update.

What it cannot prove: the webhooks of JobSet and Kueue do not run here (no controller
manager of theirs), so their rules stay in the project's own checks: JobSet's generated
Job, pod and subdomain names (kubernetes-sigs/jobset v0.12.0 pkg/webhooks/jobset_webhook.go,
`fleet.k8s_names`), Kueue's queue and flavor references (`fleet.rules.routing`).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fleet.k8s_names import RUN_ID_WORST
from tests.controlplane._rest import KINDS, Rest, RestError, path_of

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "stacks" / "Pulumi.example.yaml"
TPU_ROUTING = Path(__file__).resolve().parent / "stacks" / "Pulumi.tpurouting.yaml"
# every name at the longest validate takes (issue 36 class 2 on the real server)
LONG_NAMES = Path(__file__).resolve().parent / "stacks" / "Pulumi.longnames.yaml"
STACKS = {"example": EXAMPLE, "tpurouting": TPU_ROUTING, "longnames": LONG_NAMES}
# the longest run id the launcher and the gate make (fleet.k8s_names) and the one
# `smoke render` writes with
RUN_ID_RENDER = "render"

# Planned kinds not dry-run, and why.
SKIPPED_KINDS = {
    # not a Kubernetes object: the provider renders a chart and installs what it holds; the
    # chart pins are checked in tests/components/test_chart_pins.py
    "helm.sh/v3:Release": "a Helm release is no Kubernetes object (the chart is pinned)",
    # GKE-only kinds: GKE's multi-networking installs their CRDs; no plane but GKE has them
    "networking.gke.io/v1:Network": "GKE-only kind (GKE multi-networking's CRD)",
    "networking.gke.io/v1:GKENetworkParamSet": "GKE-only kind (GKE multi-networking's CRD)",
}


@dataclass(frozen=True)
class Made:
    """One object the project creates: where it comes from (`source`, for the test id) and
    the manifest as it reaches the API server."""

    source: str
    body: dict[str, Any]

    @property
    def id(self) -> str:
        meta = self.body.get("metadata") or {}
        where = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.source}:{self.body.get('kind')}:{where}{meta.get('name')}"


def enabled() -> bool:
    """Whether the objects are worth gathering at collection: only where the plane runs."""
    from tests.controlplane._plane import assets

    return assets() is not None


# -- the plan ---------------------------------------------------------------------------------
@functools.cache
def plan_of(stack: str) -> Any:
    """The offline plan of `stack` (components.engine.plan.run_plan), once per run."""
    from components.engine.plan import run_plan

    return run_plan(str(STACKS[stack]))


@functools.cache
def plan_objects(stack: str) -> tuple[Made, ...]:
    """Every Kubernetes object the offline plan of `stack` registers (kinds of SKIPPED_KINDS
    left out), keyed by the Pulumi resource name (two clusters make same-named objects)."""
    out = []
    for r in plan_of(stack).resources:
        if not r.type.startswith("kubernetes:") or not r.custom:
            continue
        kind = r.type.removeprefix("kubernetes:")
        group_version = kind.rsplit(":", 1)[0]
        if kind in SKIPPED_KINDS:
            continue
        body = copy.deepcopy(r.inputs)
        assert body.get("apiVersion", "").endswith(group_version.split("/", 1)[-1]), r
        out.append(Made(f"{stack}:{r.name}", body))
    return tuple(out)


def planned_types(stack: str) -> set[str]:
    return {r.type.removeprefix("kubernetes:") for r in plan_of(stack).resources
            if r.type.startswith("kubernetes:")}


# -- smoke render -----------------------------------------------------------------------------
@functools.cache
def render_objects(stack: str, run_id: str) -> tuple[Made, ...]:
    """Every manifest `accelfleet smoke render --out DIR` writes for `stack` (the same calls:
    smoke.session.plan_run, smoke.cluster.workload.write_manifests, read back from the YAML),
    then the pair rounds the launcher makes of each fabric pool
    (smoke.cluster._pairs.pair_objects) at their worst-case round and index."""
    import tempfile

    from ruamel.yaml import YAML

    from smoke.cluster._pairs import pair_name, pair_objects, rounds
    from smoke.cluster.workload import write_manifests
    from smoke.session import SmokeRequest, plan_run

    run, _, _ = plan_run(SmokeRequest(stack_file=STACKS[stack], tier=3), run_id=run_id)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in write_manifests(run, Path(tmp)):
            if path.suffix != ".yaml":  # skipped.txt: why a pool was left out
                continue
            for doc in YAML(typ="safe", pure=True).load_all(path.read_text(encoding="utf-8")):
                if doc:
                    out.append(Made(f"{stack}:render-{run_id}", doc))
    for w in run.pools:
        if w.kind != "job" or not any(o.get("kind") == "Service" for o in w.objects):
            continue
        hosts = [f"node-{i}" for i in range(max(w.pool.nodes, 3))]
        last = rounds(hosts)[-1]
        name = pair_name(w.name, len(rounds(hosts)) - 1, len(last) - 1)
        for obj in pair_objects(w, name, last[-1]):
            out.append(Made(f"{stack}:pair-{run_id}", obj))
    return tuple(out)


# -- gate proofs ------------------------------------------------------------------------------
@functools.cache
def proof_objects(stack: str) -> tuple[Made, ...]:
    """Every object a gate proof creates for each gated pool of `stack`
    (smoke.gate._proof.render, as the controller calls it): a first proof of one node, of a
    batch of nodes (pinned by node affinity), of a fabric pool's new node with a proven peer,
    of a multi-host slice as a unit, and a re-proof through the pool's Kueue queue at the
    gate's priority."""
    from smoke.cluster.sources import load_source
    from smoke.gate._proof import Unit, render

    source = load_source(STACKS[stack], None)
    inventory = source.inventory
    out = []
    for pool in inventory.pools:
        if pool.gate is None or not pool.gate.enabled or pool.kind not in ("gpu", "tpu"):
            continue
        units: dict[str, Unit] = {}
        if pool.kind == "tpu":
            slice_ = f"{pool.name}-s{pool.slices - 1}" if pool.slices > 1 else pool.name
            multi = pool.nodes // max(pool.slices, 1) > 1
            hosts = tuple(f"{pool.name}-h{i}" for i in range(pool.nodes // max(pool.slices, 1)))
            units["first"] = Unit(pool.name, hosts, slice=slice_ if multi else "")
            units["reproof"] = replace(units["first"], reproof=True)
        else:
            units["first"] = Unit(pool.name, (f"{pool.name}-n0",))
            units["batch"] = Unit(pool.name, (f"{pool.name}-n0", f"{pool.name}-n1"),
                                  independent=True)
            if pool.gate.fabric:
                units["peer"] = Unit(pool.name, (f"{pool.name}-n2",),
                                     peers=(f"{pool.name}-n0",))
            units["reproof"] = Unit(pool.name, (f"{pool.name}-n0",), reproof=True)
        for what, unit in units.items():
            rendered = render(inventory, pool, unit, run_id=RUN_ID_WORST,
                              namespace=source.settings.namespace, tier=pool.gate.max_tier,
                              timeout_s=source.settings.timeout_s, images={})
            for cluster in dict.fromkeys(w.cluster for w in rendered.pools):
                for obj in rendered.objects(cluster):
                    out.append(Made(f"{stack}:proof-{pool.name}-{what}", obj))
    return tuple(out)


# -- the dry-run ------------------------------------------------------------------------------
def plural_of(body: dict[str, Any]) -> str:
    kind = str(body.get("kind"))
    if kind not in KINDS:
        raise KeyError(f"kind {kind!r} has no plural in tests.controlplane._rest.KINDS; add it")
    return KINDS[kind]


def dry_run(rest: Rest, body: dict[str, Any]) -> dict[str, Any]:
    """The API server's answer to creating `body` (dry-run, strict fields); an object that
    exists already is dry-run applied (server-side apply, forced, strict) instead."""
    plural = plural_of(body)
    meta = body.get("metadata") or {}
    ns = meta.get("namespace") or ""
    query = {"dryRun": "All", "fieldValidation": "Strict"}
    try:
        return dict(rest.call("POST", path_of(plural, ns), body=body, query=query))
    except RestError as exc:
        if exc.status != 409 or exc.reason != "AlreadyExists":
            raise
    return dict(rest.call("PATCH", path_of(plural, ns, str(meta["name"])), body=body,
                          query={**query, "fieldManager": "accelfleet-dry-run", "force": "true"},
                          content_type="application/apply-patch+yaml"))


def namespaces_of(made: tuple[Made, ...]) -> set[str]:
    return {str(m.body["metadata"]["namespace"]) for m in made
            if (m.body.get("metadata") or {}).get("namespace")}


def ensure_namespaces(rest: Rest, names: set[str]) -> None:
    """Create (for real) each namespace the objects go in, as the plan or the launcher does
    before them."""
    for name in sorted(names):
        try:
            rest.create("namespaces", "", {"metadata": {"name": name}})
        except RestError as exc:
            if exc.status != 409:
                raise


def refusal(exc: RestError) -> str:
    """The server's refusal, with its causes, for an assertion message."""
    try:
        causes = json.loads(exc.body).get("details", {}).get("causes", [])
    except ValueError:
        causes = []
    lines = [f"{c.get('field', '')}: {c.get('message', '')}" for c in causes]
    return f"{exc.status} {exc.reason}: {exc.message}" + "".join(f"\n  {x}" for x in lines)


def params(gather: Any, *args: str) -> Iterator[Any]:
    """pytest params of `gather(*args)`, one per object, its id the object's; where the plane
    is missing, one param that the marker's skip covers (nothing is gathered)."""
    import pytest

    if not enabled():
        yield pytest.param(None, id="no-control-plane")
        return
    # sorted: a plan registers its resources in no fixed order, and pytest-xdist's workers
    # must each collect the same tests in the same order
    for made in sorted(gather(*args), key=lambda m: str(m.id)):
        yield pytest.param(made, id=made.id)


# -- the nodes the pools register -------------------------------------------------------------
EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute",
           "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
NODE_POOL_TYPES = ("gcp:container/nodePool:NodePool", "aws:eks/nodeGroup:NodeGroup")


def node_of(name: str, labels: dict[str, str], taints: list[dict[str, str]]) -> dict[str, Any]:
    """The Node a kubelet of the pool registers: the pool's labels and taints as the cloud
    passes them on (GKE node_config.labels/taints, EKS node group labels/taints; effects in
    the clouds' spelling, mapped to Kubernetes')."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": [{"key": t["key"], "value": t.get("value") or "",
                                 "effect": EFFECTS.get(t["effect"], t["effect"])}
                                for t in taints]}}


@functools.cache
def node_objects(stack: str) -> tuple[Made, ...]:
    """A Node per GKE node pool and EKS node group of `stack`'s plan, with the labels and
    taints the plan gives it: each label and taint of the stack becomes a Node's."""
    out = []
    for r in plan_of(stack).resources:
        if r.type not in NODE_POOL_TYPES:
            continue
        config = (r.inputs.get("nodeConfig") or {}) if r.type.startswith("gcp:") else r.inputs
        labels = dict(config.get("labels") or {})
        taints = list(config.get("taints") or [])
        out.append(Made(f"{stack}:{r.name}", node_of(f"dry-run-{r.name}"[:63], labels,
                                                     taints)))
    return tuple(out)
