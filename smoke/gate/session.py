"""The gate as library calls: what `accelfleet gate run`, `gate status`, `gate open` and
`gate close` do, with no argument parsing and no printing.

    summaries = run_gate(GateRequest(stack_file=Path("stacks/Pulumi.prod.yaml"), once=True))
    rows = gate_status(GateRequest(stack_file=...))      # every gated node, its state and age
    open_pool(GateRequest(...), "h100-train", reason="INC-42: proofs blocked by a bad image")

Where the facts come from: `inventory` (a saved inventory JSON: what the in-cluster
Deployment mounts), else the stack file or `--outputs`, as `smoke run` reads them
(`smoke.cluster.sources`); the clusters are reached as `smoke run` reaches them
(`smoke.cluster.access`), or, `in_cluster`, through the pod's ServiceAccount.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.errors import InputError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from fleet.inventory import Inventory
    from smoke.gate.controller import GateSummary

MAX_INVENTORY_BYTES = 16 * 2**20


@dataclass(frozen=True)
class GateRequest:
    stack_file: Path | None = None
    outputs: Path | None = None
    inventory: Path | None = None  # a saved inventory (Inventory.to_dict JSON)
    kubeconfig: Path | None = None
    contexts: Mapping[str, str] = field(default_factory=dict)  # cluster -> context
    in_cluster: bool = False
    cluster: str | None = None  # in the cluster: which cluster of the inventory this is
    namespace: str | None = None  # None: the stack's smoke namespace
    once: bool = False
    timeout_s: int | None = None
    health_port: int | None = None
    metrics_port: int | None = None
    history: Path | None = None
    record_history: bool = False
    elect: bool = True
    lease_s: float = 15.0


@dataclass(frozen=True)
class _Target:
    inventory: Inventory
    namespace: str
    timeout_s: int
    images: dict[str, str]
    clients: dict[str, ApiClient]


def _inventory_file(path: Path) -> Inventory:
    from fleet.input_files import load_json
    from fleet.inventory import Inventory

    data = load_json(path, what="inventory file", max_bytes=MAX_INVENTORY_BYTES,
                     hint="export it with `accelfleet plan --inventory FILE`")
    return Inventory.from_dict(data)


def _target(request: GateRequest, *, gated_only: bool = True, pool: str | None = None
            ) -> _Target:
    from fleet import smoke_defaults as SD
    from smoke.cluster.access import connect

    if request.in_cluster:
        if request.inventory is None or not request.cluster:
            raise InputError("--in-cluster needs --inventory FILE and --cluster NAME",
                             hint="the Deployment mounts the inventory at "
                             "/etc/accelfleet/inventory.json")
        inventory = _inventory_file(request.inventory)
        known = sorted({p.cluster for p in inventory.pools if p.cluster})
        if request.cluster not in known:
            raise InputError(f"cluster {request.cluster!r} is not in the inventory",
                             hint=f"clusters: {', '.join(known) or '(none)'}")
        from kubernetes import client as k
        from kubernetes import config  # type: ignore[attr-defined]

        try:
            config.load_incluster_config()
        except config.ConfigException as exc:
            from fleet.errors import SetupError

            raise SetupError(f"not inside a cluster: {exc}",
                             hint="run without --in-cluster, with --kubeconfig") from None
        return _Target(inventory, request.namespace or SD.NAMESPACE,
                       request.timeout_s or SD.TIMEOUT_S, {},
                       {request.cluster: k.ApiClient()})
    from smoke.cluster.sources import load_source

    if request.inventory is not None and request.stack_file is None and request.outputs is None:
        inventory = _inventory_file(request.inventory)
        namespace, timeout_s, images = SD.NAMESPACE, SD.TIMEOUT_S, {}
        from smoke.cluster.access import ClusterRef

        refs = {p.cluster: ClusterRef(p.cluster, p.cloud, p.region or ClusterRef.region,
                                      p.project or "") for p in inventory.pools if p.cluster}
        kubeconfigs: dict[str, str] = {}
    else:
        source = load_source(request.stack_file, request.outputs)
        inventory = source.inventory
        if request.inventory is not None:
            inventory = _inventory_file(request.inventory)
        s = source.settings
        namespace, timeout_s, images = s.namespace, s.timeout_s, dict(s.images)
        refs, kubeconfigs = source.clusters, source.kubeconfigs
    pools = [p for p in inventory.pools if p.cluster and (p.gated or not gated_only)]
    if pool is not None:
        from fleet.errors import UnknownNameError

        names = [p.name for p in pools]
        if pool not in names:
            raise UnknownNameError("pool", pool, names, hint=f"pools: {', '.join(names)}")
        pools = [p for p in pools if p.name == pool]
    if request.cluster is not None:
        pools = [p for p in pools if p.cluster == request.cluster]
    used = sorted({p.cluster for p in pools if p.cluster})
    if not used:
        raise InputError("no pool of the inventory is gated" + (
            f" on cluster {request.cluster}" if request.cluster else ""),
            hint="declare a gate on the stack's accelerator pools (docs/gate.md), or check "
            "--cluster")
    missing = [c for c in used if c not in refs]
    if missing:
        raise InputError(f"no access details for cluster(s) {', '.join(missing)}",
                         hint="pass the stack file or --outputs")
    clients = connect([refs[c] for c in used], kubeconfig=request.kubeconfig,
                      contexts={k: v for k, v in request.contexts.items() if k in used},
                      outputs_kubeconfigs=kubeconfigs)
    return _Target(inventory, request.namespace or namespace,
                   request.timeout_s or timeout_s, images, clients)


def run_gate(request: GateRequest, stop: threading.Event | None = None
             ) -> list[GateSummary]:
    """One controller per cluster of the gated pools, each in a thread, until `stop` (or,
    `once`, until every gated node present at the start is proven or failed)."""
    from smoke.gate._serve import Servers
    from smoke.gate.controller import Gate, GateOptions

    target = _target(request)
    stop = stop or threading.Event()
    gates = [Gate(client, name, target.inventory, GateOptions(
        namespace=target.namespace, once=request.once, timeout_s=target.timeout_s,
        images=target.images, once_wait_s=float(target.timeout_s) if request.once else None,
        history=request.history, record_history=request.record_history,
        elect=request.elect, lease_s=request.lease_s))
        for name, client in sorted(target.clients.items())]
    servers = Servers(gates, health_port=request.health_port,
                      metrics_port=request.metrics_port).start()
    summaries: list[GateSummary | None] = [None] * len(gates)

    def drive(i: int) -> None:
        summaries[i] = gates[i].run(stop)

    threads = [threading.Thread(target=drive, args=(i,), daemon=True, name=f"gate-{g.cluster}")
               for i, g in enumerate(gates)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                try:
                    t.join(0.2)
                except KeyboardInterrupt:
                    stop.set()
    finally:
        servers.stop()
    return [s for s in summaries if s is not None]


# -- status -------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeRow:
    """One node of a gated pool, as `gate status` shows it."""

    cluster: str
    pool: str
    team: str
    node: str
    state: str  # unproven, proving, proven, failed, open
    age_s: float | None  # since the node was created
    since: str  # proven: when; failed: the condition's time; proving: the run id
    reason: str  # failed: why; open: who and why
    quarantined: bool

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "pool": self.pool, "team": self.team,
                "node": self.node, "state": self.state, "age_s": None if self.age_s is None
                else round(self.age_s, 1), "since": self.since, "reason": self.reason,
                "quarantined": self.quarantined}


@dataclass(frozen=True)
class ControllerRow:
    """Whether a controller holds the cluster's Lease (fails closed: none means new nodes
    stay gated)."""

    cluster: str
    holder: str
    renewed: str
    up: bool

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "holder": self.holder, "renewed": self.renewed,
                "up": self.up}


@dataclass(frozen=True)
class GateStatus:
    nodes: tuple[NodeRow, ...]
    controllers: tuple[ControllerRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "accelfleet.gate/status", "schema_version": 1,
                "controllers": [c.to_dict() for c in self.controllers],
                "nodes": [n.to_dict() for n in self.nodes]}


def _nodes_of(client: ApiClient, pools: set[str]) -> list[dict[str, Any]]:
    from kubernetes import client as k

    from fleet.labels import POOL_LABEL
    from smoke.cluster.access import pages, with_retries
    from smoke.gate._kube import REQUEST_TIMEOUT_S, raw

    core = k.CoreV1Api(client)
    selector = f"{POOL_LABEL} in ({','.join(sorted(pools))})"
    items, _ = pages(lambda token: raw(with_retries(
        core.list_node, label_selector=selector, limit=500, _continue=token,
        _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)),
        what="the node list")  # bounded (issue 29)
    return items


def _controller(client: ApiClient, cluster: str, namespace: str) -> ControllerRow:
    from kubernetes import client as k

    from smoke.gate._kube import REQUEST_TIMEOUT_S, raw, status_of
    from smoke.gate.controller import LEASE_NAME

    try:
        lease = raw(k.CoordinationV1Api(client).read_namespaced_lease(
            LEASE_NAME, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S))
    except Exception as exc:
        if status_of(exc) in (404, 403):
            return ControllerRow(cluster, "", "", False)
        raise
    spec = lease.get("spec") or {}
    renewed = str(spec.get("renewTime") or "")
    up = False
    try:
        when = datetime.fromisoformat(renewed.replace("Z", "+00:00"))
        up = bool(spec.get("holderIdentity")) and (datetime.now(UTC) - when).total_seconds() \
            <= float(spec.get("leaseDurationSeconds") or 15)
    except ValueError:
        up = False
    return ControllerRow(cluster, str(spec.get("holderIdentity") or ""), renewed, up)


def gate_status(request: GateRequest) -> GateStatus:
    """Every node of every gated pool: its state and age, per cluster, pool and team; and
    whether each cluster's controller is up (holds a live Lease)."""
    from smoke.gate.nodes import GateNode

    target = _target(request)
    rows: list[NodeRow] = []
    controllers = []
    now = datetime.now(UTC)
    for cluster, client in sorted(target.clients.items()):
        pools = {p.name: p for p in target.inventory.pools if p.cluster == cluster and p.gated}
        controllers.append(_controller(client, cluster, target.namespace))
        for raw_node in _nodes_of(client, set(pools)):
            n = GateNode.of(raw_node)
            cond = n.condition or {}
            since, reason = "", ""
            if n.state == "proven":
                since = str((n.proof or {}).get("at", ""))
            elif n.state == "failed":
                since, reason = str(cond.get("lastTransitionTime", "")), str(
                    cond.get("message", ""))
            elif n.state == "proving":
                since = n.run
            elif n.state == "open":
                opened = n.opened or {}
                since, reason = str(opened.get("at", "")), f"{opened.get('by', '?')}: " \
                    f"{opened.get('reason', '')}"
            age = None if n.created is None else (now - n.created).total_seconds()
            rows.append(NodeRow(cluster, n.pool, n.team or pools[n.pool].team, n.name,
                                n.state, age, since, reason, n.quarantined))
    rows.sort(key=lambda r: (r.cluster, r.team, r.pool, r.node))
    return GateStatus(tuple(rows), tuple(controllers))


# -- open and close -------------------------------------------------------------------------
@dataclass(frozen=True)
class Changed:
    node: str
    what: str  # opened, closed, unchanged

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "what": self.what}


def _pool_target(request: GateRequest, pool: str) -> tuple[ApiClient, Any]:
    target = _target(request, gated_only=False, pool=pool)
    info = next(p for p in target.inventory.pools if p.name == pool)
    return target.clients[str(info.cluster)], info


def open_pool(request: GateRequest, pool: str, *, reason: str, by: str) -> list[Changed]:
    """Lift the gate of `pool` by hand: every node of the pool gets GATE_OPEN_ANNOTATION (who,
    when, why) and loses the gate taint; the controller leaves an open node alone."""
    from fleet.labels import GATE_OPEN_ANNOTATION, GATE_TAINT_KEY
    from smoke.gate import _kube as K

    if not reason.strip():
        raise InputError("gate open needs a reason", hint="e.g. --reason 'INC-42: the proof "
                         "image is broken; nodes checked by hand'")
    client, _ = _pool_target(request, pool)
    from kubernetes import client as k

    core = k.CoreV1Api(client)
    record = json.dumps({"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "by": by,
                         "reason": reason.strip()[:500]}, sort_keys=True)
    out = []
    for node in _nodes_of(client, {pool}):
        name = node["metadata"]["name"]

        def change(n: dict[str, Any]) -> dict[str, Any]:
            taints = (n.get("spec") or {}).get("taints") or []
            return {"metadata": {"resourceVersion": n["metadata"]["resourceVersion"],
                                 "annotations": {GATE_OPEN_ANNOTATION: record}},
                    "spec": {"taints": [t for t in taints if t.get("key") != GATE_TAINT_KEY]}}

        K.patch_node(core, name, change)
        K.node_event(core, node, "GateOpened", f"accelfleet gate opened on pool {pool} by "
                     f"{by}: {reason.strip()[:500]}", warning=True)
        out.append(Changed(name, "opened"))
    return out


def close_pool(request: GateRequest, pool: str, *, by: str) -> list[Changed]:
    """Restore the gate of `pool`: the open record goes; every node that has no passed proof
    gets the gate taint back (the controller proves it)."""
    from fleet.labels import GATE_LABEL, GATE_OPEN_ANNOTATION
    from smoke.gate import _kube as K
    from smoke.gate.nodes import PROVEN, GateNode, gate_taint

    client, _ = _pool_target(request, pool)
    from kubernetes import client as k

    core = k.CoreV1Api(client)
    out = []
    for node in _nodes_of(client, {pool}):
        name = node["metadata"]["name"]
        before = GateNode.of(node)

        def change(n: dict[str, Any]) -> dict[str, Any] | None:
            g = GateNode.of(n)
            if g.opened is None and (g.tainted or g.proof is not None):
                return None
            body: dict[str, Any] = {"metadata": {
                "resourceVersion": n["metadata"]["resourceVersion"],
                "annotations": {GATE_OPEN_ANNOTATION: None}}}
            proven = g.proof_holds and g.labels.get(GATE_LABEL) == PROVEN
            if not g.tainted and not proven:
                body["spec"] = {"taints": [*(dict(t) for t in g.taints), gate_taint()]}
            return body

        changed = K.patch_node(core, name, change)
        if changed is None:
            out.append(Changed(name, "unchanged"))
            continue
        K.node_event(core, node, "GateClosed", f"accelfleet gate closed on pool {pool} by "
                     f"{by}", warning=False)
        out.append(Changed(name, "closed" if before.opened is not None else "gated"))
    return out
