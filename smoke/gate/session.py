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
LEASE_READ_S = 15.0  # `gate status`: the Lease read, every attempt, within this
LEASE_SKEW_S = 5.0  # a renewTime further ahead of this clock is clock skew, not "up"


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
    image_pull_secrets: tuple[str, ...] = ()  # every proof pod pulls with these Secrets


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
                     hint="export it with `pulumi stack output inventory --json > FILE`, or give "
                     "the stack file instead (`accelfleet gate run STACK`)")
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


def proof_timeout_s(asked_s: int | None) -> int:
    """One proof's deadline: `asked_s`, or the gate's default (fleet.gate.PROOF_TIMEOUT_S, not
    the stack's smoke.timeout_s); never past the autoscaler's startup window, less the time a
    node takes to turn Ready (fleet.gate.PROOF_TIMEOUT_MAX_S)."""
    from fleet.gate import AUTOSCALER_STARTUP_WINDOW_S, PROOF_TIMEOUT_MAX_S, PROOF_TIMEOUT_S

    if asked_s is None:
        return PROOF_TIMEOUT_S
    if not 1 <= asked_s <= PROOF_TIMEOUT_MAX_S:
        raise InputError(
            f"a gate proof deadline of {asked_s} s is past the autoscaler's window: a node "
            f"still tainted {AUTOSCALER_STARTUP_WINDOW_S // 60} minutes after its creation "
            "counts as unready, and past 3 such nodes and 45% of the cluster the "
            "cluster-autoscaler stops scaling (docs/gate.md)",
            hint=f"use --timeout-s {PROOF_TIMEOUT_MAX_S} or less (default {PROOF_TIMEOUT_S}); "
            "a longer proof belongs in `accelfleet smoke run`")
    return asked_s


def run_gate(request: GateRequest, stop: threading.Event | None = None
             ) -> list[GateSummary]:
    """One controller per cluster of the gated pools, each in a thread, until `stop` (or,
    `once`, until every gated node present at the start is proven or failed)."""
    from smoke.gate._serve import Servers
    from smoke.gate.controller import Gate, GateOptions
    from smoke.gate.recording import history_choice

    timeout_s = proof_timeout_s(request.timeout_s)
    target = _target(request)
    stop = stop or threading.Event()
    gates = [Gate(client, name, target.inventory, GateOptions(
        namespace=target.namespace, once=request.once, timeout_s=timeout_s,
        images=target.images, once_wait_s=float(timeout_s) if request.once else None,
        history=request.history, record_history=history_choice(
            request.in_cluster, request.history, request.record_history)[0],
        elect=request.elect, lease_s=request.lease_s,
        image_pull_secrets=tuple(request.image_pull_secrets)))
        for name, client in sorted(target.clients.items())]
    servers = Servers(gates, health_port=request.health_port,
                      metrics_port=request.metrics_port).start()
    summaries: list[GateSummary | None] = [None] * len(gates)

    def drive(i: int) -> None:
        try:
            summaries[i] = gates[i].run(stop)
        except Exception as exc:  # never a silent success: the controller's end is said
            summary = gates[i].summary
            summary.api_problems.append(f"the controller stopped: {type(exc).__name__}: "
                                        f"{str(exc)[:300]}")
            summaries[i] = summary

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
    problem: str = ""  # why it is not up: no Lease, expired, clock skew, no answer

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "holder": self.holder, "renewed": self.renewed,
                "up": self.up, "problem": self.problem}


@dataclass(frozen=True)
class GateStatus:
    nodes: tuple[NodeRow, ...]
    controllers: tuple[ControllerRow, ...]
    skipped: tuple[str, ...] = ()  # node objects that do not read as Nodes, and why
    # (cluster, pool) -> the opening (at, by, reason) of each pool `gate open` recorded open
    open_pools: tuple[tuple[str, str, dict[str, Any]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "accelfleet.gate/status", "schema_version": 1,
                "controllers": [c.to_dict() for c in self.controllers],
                "open_pools": [{"cluster": c, "pool": p, **r} for c, p, r in self.open_pools],
                "nodes": [n.to_dict() for n in self.nodes], "skipped": list(self.skipped)}


def _nodes_of(client: ApiClient, pools: set[str], skipped: list[tuple[str, str]] | None = None
              ) -> list[dict[str, Any]]:
    """The nodes of `pools` that read as Nodes (`smoke.cluster.objects.node_problem`); each
    other item, (name, why), goes to `skipped` (`gate status` names them; open and close
    leave them alone). One list, paged (500 a page, bounded: issue 29), never a call per
    node."""
    from fleet.labels import POOL_LABEL
    from smoke.cluster.access import pages, with_retries
    from smoke.cluster.objects import node_problem, valid
    from smoke.gate._kube import REQUEST_TIMEOUT_S, RawReads, raw

    reads = RawReads(client)  # no generated CoreV1Api to import (issue 35)
    selector = f"{POOL_LABEL} in ({','.join(sorted(pools))})"
    items, _ = pages(lambda token: raw(with_retries(
        reads.list_node, label_selector=selector, limit=500, _continue=token,
        _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)),
        what="the node list")  # bounded (issue 29)
    good, bad = valid(items, node_problem)
    if skipped is not None:
        skipped += bad
    return good


def _controller(client: ApiClient, cluster: str, namespace: str) -> ControllerRow:
    """Whether a controller renewed the cluster's Lease within its duration, by this
    machine's clock: the read bounded (LEASE_READ_S, a drip included), a renewTime ahead of
    this clock (past LEASE_SKEW_S) is clock skew and not "up", an unreadable Lease is not up."""
    import time

    from smoke.cluster.access import with_retries
    from smoke.cluster.nodeapi import aware_time
    from smoke.cluster.objects import lease_problem
    from smoke.gate._kube import RawReads, raw, status_of
    from smoke.gate._model import LEASE_NAME

    try:
        lease = raw(with_retries(
            RawReads(client).read_namespaced_lease, LEASE_NAME, namespace,
            _preload_content=False, _request_timeout=(5.0, LEASE_READ_S), cap_s=LEASE_READ_S,
            deadline=time.monotonic() + LEASE_READ_S))
    except Exception as exc:
        if status_of(exc) in (404, 403):
            return ControllerRow(cluster, "", "", False, "no Lease: no controller has run "
                                 if status_of(exc) == 404 else "the Lease may not be read "
                                 "(403)")
        return ControllerRow(cluster, "", "", False, "the Lease was not read within "
                             f"{LEASE_READ_S:g} s ({type(exc).__name__}): the API server "
                             "answers too slowly")
    problem = lease_problem(lease)
    if problem:
        return ControllerRow(cluster, "", "", False, f"the Lease does not read: {problem}")
    spec = lease.get("spec") or {}
    holder, renewed = str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or "")
    duration_s = float(spec.get("leaseDurationSeconds") or 15)
    when = aware_time(renewed)
    if not holder:
        return ControllerRow(cluster, "", renewed, False, "no holder: released")
    if when is None:
        return ControllerRow(cluster, holder, renewed, False,
                             "its renewTime is not a time with its UTC offset")
    age_s = (datetime.now(UTC) - when).total_seconds()
    if age_s < -LEASE_SKEW_S:
        return ControllerRow(cluster, holder, renewed, False, f"clock skew: its renewTime is "
                             f"{-age_s:.0f} s ahead of this clock; not taken as alive")
    if age_s > duration_s:
        return ControllerRow(cluster, holder, renewed, False, f"expired: not renewed for "
                             f"{age_s:.0f} s, past its {duration_s:g} s lease")
    return ControllerRow(cluster, holder, renewed, True)


def gate_status(request: GateRequest) -> GateStatus:
    """Every node of every gated pool: its state and age, per cluster, pool and team; and
    whether each cluster's controller is up (holds a live Lease)."""
    from smoke.gate._kube import RawReads
    from smoke.gate.nodes import GateNode
    from smoke.gate.pools import read_open

    target = _target(request)
    rows: list[NodeRow] = []
    controllers = []
    skipped: list[str] = []
    open_pools: list[tuple[str, str, dict[str, Any]]] = []
    now = datetime.now(UTC)
    for cluster, client in sorted(target.clients.items()):
        pools = {p.name: p for p in target.inventory.pools if p.cluster == cluster and p.gated}
        controllers.append(_controller(client, cluster, target.namespace))
        reads: Any = RawReads(client)  # read_open's one call, as CoreV1Api answers it
        for name, record in sorted((read_open(reads, target.namespace) or {}).items()):
            if name in pools:
                open_pools.append((cluster, name, record))
        bad: list[tuple[str, str]] = []
        good = _nodes_of(client, set(pools), bad)
        skipped += [f"{cluster}/{name or '(no name)'}: {why}" for name, why in bad]
        for raw_node in good:  # each node read once (issue 35: its proof was parsed a
            # dozen times, its shape checked twice)
            n = GateNode.of(raw_node, checked=True)
            if n.pool not in pools:
                continue
            cond = n.condition or {}
            since, reason = "", ""
            state = n.state
            if state == "proven":
                since = str((n.proof or {}).get("at", ""))
                if n.proof is None and n.proof_problem != "no proof":
                    reason = n.proof_problem
            elif state == "failed":
                since, reason = str(cond.get("lastTransitionTime", "")), str(
                    cond.get("message", ""))
            elif state == "proving":
                since = n.run
            elif state == "unproven" and cond.get("reason") == "UnitFailed":
                # held with its slice or fabric unit (smoke.gate._proof.UNIT): say why
                since, reason = str(cond.get("lastTransitionTime", "")), str(
                    cond.get("message", ""))
            elif state == "open":
                opened = n.opened or {}
                since, reason = str(opened.get("at", "")), f"{opened.get('by', '?')}: " \
                    f"{opened.get('reason', '')}"
            age = None if n.created is None else (now - n.created).total_seconds()
            rows.append(NodeRow(cluster, n.pool, n.team or pools[n.pool].team, n.name,
                                state, age, since, reason, n.quarantined))
    rows.sort(key=lambda r: (r.cluster, r.team, r.pool, r.node))
    return GateStatus(tuple(rows), tuple(controllers), tuple(skipped), tuple(open_pools))


# -- open and close -------------------------------------------------------------------------
@dataclass(frozen=True)
class Changed:
    node: str
    what: str  # opened, closed, unchanged

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "what": self.what}


def _pool_target(request: GateRequest, pool: str) -> tuple[ApiClient, Any, str]:
    target = _target(request, gated_only=False, pool=pool)
    info = next(p for p in target.inventory.pools if p.name == pool)
    return target.clients[str(info.cluster)], info, target.namespace


def open_pool(request: GateRequest, pool: str, *, reason: str, by: str) -> list[Changed]:
    """Lift the gate of `pool` by hand. The pool is recorded open (who, when, why) in the
    controller's pools ConfigMap (smoke.gate.pools), which the controller follows for nodes
    that join later; every node present is opened now (its gate taint, and what a failed
    proof did, undone; GATE_OPEN_ANNOTATION records the opening and the state it was in)."""
    from kubernetes import client as k

    from fleet.errors import SetupError
    from smoke.gate import _kube as K
    from smoke.gate import lifecycle as L

    if not reason.strip():
        raise InputError("gate open needs a reason", hint="e.g. --reason 'INC-42: the proof "
                         "image is broken; nodes checked by hand'")
    client, _, namespace = _pool_target(request, pool)
    core = k.CoreV1Api(client)
    record = {"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "by": by,
              "reason": reason.strip()[:500]}
    out = []
    try:
        _record_pool(core, namespace, pool, record)
    except SetupError as exc:  # the escape hatch still opens the nodes present
        out.append(Changed("", f"not recorded: {exc.message}; nodes that join later stay "
                           "gated (run `gate open` again for them)"))
    for node in _nodes_of(client, {pool}):
        name = node["metadata"]["name"]
        K.patch_node(core, name, lambda n: L.open_patch(n, record))
        K.node_event(core, node, "GateOpened", f"accelfleet gate opened on pool {pool} by "
                     f"{by}: {reason.strip()[:500]}", warning=True)
        out.append(Changed(name, "opened"))
    return out


def _record_pool(core: Any, namespace: str, pool: str, record: dict[str, Any] | None) -> None:
    from fleet.errors import SetupError
    from smoke.gate import _kube as K
    from smoke.gate.pools import set_open

    try:
        set_open(core, namespace, pool, record)
    except Exception as exc:
        raise SetupError(f"could not record pool {pool} {'open' if record else 'closed'} in "
                         f"{namespace}/accelfleet-gate-pools "
                         f"({K.status_of(exc) or type(exc).__name__})",
                         hint="you need create and patch on ConfigMaps in the gate's namespace "
                         "(--namespace, default the stack's smoke namespace); is the gate "
                         "deployed on this cluster?") from None


def close_pool(request: GateRequest, pool: str, *, by: str) -> list[Changed]:
    """Restore the gate of `pool`: the pool's open record goes; a node opened while proven is
    proven again, every other node of the pool without a standing proof goes back to
    `unproven`, with the gate taint, for a fresh proof (smoke.gate.lifecycle.close_patch)."""
    from kubernetes import client as k

    from fleet.errors import SetupError
    from smoke.gate import _kube as K
    from smoke.gate import lifecycle as L
    from smoke.gate.nodes import GateNode

    client, info, namespace = _pool_target(request, pool)
    on_fail = info.gate.on_fail if info.gate is not None else "keep"
    core = k.CoreV1Api(client)
    out = []
    try:
        _record_pool(core, namespace, pool, None)
    except SetupError as exc:  # the nodes are still closed: the gate fails closed
        out.append(Changed("", f"not recorded: {exc.message}"))
    for node in _nodes_of(client, {pool}):
        name = node["metadata"]["name"]
        before = GateNode.of(node)
        changed = K.patch_node(core, name, lambda n: L.close_patch(n, on_fail))
        if changed is None:
            out.append(Changed(name, "unchanged"))
            continue
        after = GateNode.of(changed)
        K.node_event(core, node, "GateClosed", f"accelfleet gate closed on pool {pool} by "
                     f"{by}" + ("; the node waits for a fresh proof"
                                if after.tainted else ""), warning=False)
        out.append(Changed(name, "closed" if before.opened is not None else "gated"))
    return out
