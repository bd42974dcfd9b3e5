"""What the gate's tests share: the example stack's inventory with its accelerator pools gated
(until the stack declares the gate, the tests declare it here, as the inventory will carry
it), gated nodes built from recorded real nodes (tests.smoke.nodes) carrying the gate taint as
the node pool sets it, agent output, and a controller run in a thread."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fleet.inventory import Inventory, InventoryGate, InventoryPool
from smoke.gate.controller import Gate, GateOptions, GateSummary
from smoke.gate.nodes import gate_taint, gate_toleration
from smoke.probes.results import HostReport, ProbeResult, Verdict
from tests.smoke.nodes import eks_node, gke_node

EXAMPLE = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.example.yaml"
NAMESPACE = "accelfleet-gate"


def gated_inventory(pools: dict[str, InventoryGate] | None = None) -> Inventory:
    """The example stack's inventory, each accelerator pool gated (`pools`: the gate of each
    named pool; default: every GPU and TPU pool with the declared defaults)."""
    from smoke.cluster.sources import load_source

    inventory = load_source(EXAMPLE, None).inventory
    out = []
    for p in inventory.pools:
        gate = (pools or {}).get(p.name) if pools is not None else (
            InventoryGate() if p.kind in ("gpu", "tpu") else None)
        if gate is not None:
            p = replace(p, gate=gate, tolerations=[*p.tolerations, gate_toleration()])
        out.append(p)
    return replace(inventory, pools=tuple(out))


def pool(inventory: Inventory, name: str) -> InventoryPool:
    return next(p for p in inventory.pools if p.name == name)


def resolved(name: str) -> Any:
    from fleet import load_fleet

    return next(p for p in load_fleet(str(EXAMPLE)).pools if p.name == name)


def gke_gated_node(pool_name: str, name: str, *, nodepool: str | None = None) -> dict[str, Any]:
    """A node of a gated GKE pool of the example stack: its machine type's recording, the
    pool's labels and taints, and the gate taint the node pool is created with."""
    p = resolved(pool_name)
    taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in p.spec.taints]
    zones = list(p.spec.zones)
    return gke_node(name, p.shape.machine_type, nodepool=nodepool or p.name,
                    zone=zones[0] if zones else "us-central1-a", labels=p.labels,
                    taints=[*taints, gate_taint()], topology=p.shape.topology_str or None)


def eks_gated_node(pool_name: str, name: str) -> dict[str, Any]:
    """A node of a gated EKS node group of the example stack (its recording, the group's
    labels and taints, the gate taint)."""
    p = resolved(pool_name)
    taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in p.spec.taints]
    zones = list(p.spec.zones)
    return eks_node(name, p.shape.machine_type, nodegroup=p.name,
                    zone=zones[0] if zones else "us-east-1a", labels=p.labels,
                    taints=[*taints, gate_taint()])


def h100_report(host: str, tflops: float) -> str:
    """An H100 host's report as a real run prints it (tests.smoke.test_cluster_run._recorded:
    the recorded figures, with this matmul figure)."""
    from tests.smoke.test_cluster_run import _recorded

    return _recorded(host, tflops)


def tpu_report(host: str, inv_pool: InventoryPool, ratio: float = 0.8) -> str:
    """A TPU host's report in the agent's shape: every device of the host at `ratio` of the
    catalog's per-device peaks (no TPU run is recorded here: the ratio is an assumed healthy
    value), the psum over the host's devices."""
    import smoke.expectations

    exp = smoke.expectations.for_pool(inv_pool, "jax")
    assert exp.accelerator is not None and exp.devices
    peak = exp.accelerator.bf16_tflops / exp.devices_per_chip
    hbm = exp.accelerator.memory_gbps / exp.devices_per_chip
    devs = [f"tpu{i}" for i in range(exp.devices)]
    rs = [ProbeResult(d, "inventory", 0, Verdict.PASS, "recorded", exp.memory_gib, exp.memory_gib,
                      "GiB") for d in devs]
    rs += [ProbeResult(d, "known_answer", 1, Verdict.PASS, "ok", 2e-4, 5e-3, "rel err",
                       details={"checksum": 99.5}) for d in devs]
    rs += [ProbeResult("host", "psum", 1, Verdict.PASS, "ok", float(exp.devices),
                       float(exp.devices), "")]
    rs += [ProbeResult(d, "matmul_tflops", 2, Verdict.PASS, "ok", ratio * peak, peak,
                       "TFLOP/s") for d in devs]
    rs += [ProbeResult(d, "memory_gbps", 2, Verdict.PASS, "ok", ratio * hbm, hbm, "GB/s")
           for d in devs]
    rs += [ProbeResult(d, "sustained_tflops", 2, Verdict.PASS, "ok", 0.95 * ratio * peak, peak,
                       "TFLOP/s") for d in devs]
    rep = HostReport(host=host, backend="jax", platform="tpu", versions={"jax": "0.7.0"},
                     tier=2, results=tuple(rs), accelerator=exp.accelerator.key)
    return json.dumps(rep.to_dict())


def client_of(cluster: Any, tmp_path: Path, context: str = "fake") -> Any:
    from kubernetes import config

    kc = cluster.kubeconfig(tmp_path / f"kubeconfig-{context}", context=context)
    return config.new_client_from_config(config_file=str(kc), context=context)


@dataclass
class Running:
    gate: Gate
    stop: threading.Event
    thread: threading.Thread
    summary: GateSummary | None = None


@contextmanager
def controller(cluster: Any, tmp_path: Path, inventory: Inventory, cluster_name: str, *,
               context: str = "fake", client: Any = None, **options: Any) -> Iterator[Running]:
    """A gate controller on the fake cluster (or the real one: `context` "envtest"), in a
    thread, until the block ends; `client`: its API client (default: the cluster's admin)."""
    opts = {"namespace": NAMESPACE, "lease_s": 2.0, "timeout_s": 60, "poll_s": 0.1,
            "watch_timeout_s": 30, "retry_first_s": 0.5,
            # rounds at a test's pace: time alone (a backoff, a re-proof falling due) acts
            # within 1 s, not the 5 s of a controller at 5,000 nodes
            "round_every_s": 1.0, "round_min_s": 0.2,
            # the DCGM exporters are read only where a test asks (tests of smoke.gate._exporter
            # name the namespace): elsewhere a GPU node has no exporter pod, which the gate
            # would say on it (GateExporterUnread)
            "exporter_namespace": None, **options}
    gate = Gate(client or client_of(cluster, tmp_path, context), cluster_name, inventory,
                GateOptions(**opts))
    stop = threading.Event()
    running = Running(gate, stop, threading.Thread(target=lambda: None))

    def body() -> None:
        running.summary = gate.run(stop)

    running.thread = threading.Thread(target=body, daemon=True, name="gate-under-test")
    running.thread.start()
    try:
        yield running
    finally:
        stop.set()
        running.thread.join(60)


def deploy_kueue(cluster: Any, inventory: Inventory, cluster_name: str, *,
                 priority_class: bool = True) -> None:
    """What `pulumi up` leaves on `cluster_name` for Kueue: the example stack's routing as
    accelfleet makes it (team namespaces, LocalQueues, ClusterQueues, flavors) and, unless
    `priority_class` is False, the gate's WorkloadPriorityClass (components/k8s/_gate.py,
    from the cluster's inventory)."""
    from components.k8s import kueue_objects
    from components.k8s._gate import GateControllerArgs, gate_objects
    from fleet import load_fleet
    from fleet.routing import fleet_routing
    from tests.smoke.fakekube._api import KIND_PLURALS

    for routing in fleet_routing(load_fleet(str(EXAMPLE))):
        if routing.cluster != cluster_name:
            continue
        for obj in kueue_objects(routing):
            cluster.create(KIND_PLURALS[obj["kind"]], obj["metadata"].get("namespace", ""),
                           obj)
    mine = {**inventory.to_dict(), "pools": [p for p in inventory.to_dict()["pools"]
                                            if p["cluster"] == cluster_name]}
    for obj in gate_objects(GateControllerArgs(cluster=cluster_name, namespace=NAMESPACE,
                                               inventory=mine)):
        if obj["kind"] == "WorkloadPriorityClass" and priority_class:
            cluster.create("workloadpriorityclasses", "", obj)


def routed(inventory: Inventory, pool_name: str, **gate: Any) -> Inventory:
    """`inventory` with `pool_name`'s gate routed through its owner team's Kueue queue, as
    `fleet.inventory.build_inventory` routes it (`gate`: more InventoryGate fields)."""
    from fleet import load_fleet
    from fleet.inventory import build_inventory

    built = next(p for p in build_inventory(load_fleet(str(EXAMPLE)), "example").pools
                 if p.name == pool_name)
    assert built.gate is not None and built.gate.queue is not None
    out = [replace(p, gate=replace(built.gate, **gate)) if p.name == pool_name else p
           for p in inventory.pools]
    return replace(inventory, pools=tuple(out))


def proof_jobs(cluster: Any) -> list[dict[str, Any]]:
    """Every proof Job as the API server first stored it (created), from its change log."""
    from fleet.labels import RUN_LABEL

    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for _, _, (plural, ns, name), obj in cluster.changes():
        if plural == "jobs" and RUN_LABEL in (obj["metadata"].get("labels") or {}):
            seen.setdefault((ns, name), obj)
    return list(seen.values())


def admitted(cluster: Any, job: dict[str, Any]) -> bool:
    """Whether the Job was resumed (Kueue's admission) at some point of the change log."""
    meta = job["metadata"]
    return any(plural == "jobs" and ns == meta["namespace"] and name == meta["name"]
               and obj["spec"].get("suspend") is False
               for _, _, (plural, ns, name), obj in cluster.changes())
