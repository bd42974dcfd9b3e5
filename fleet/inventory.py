"""The inventory: the contract between deploy and smoke.

Per pool: its cloud, cluster, accelerator, node count, devices per node, node selector,
tolerations and Kubernetes resource; where it lives (region, GCP project); what a node holds
(vCPUs, memory) and its GPU fabric's figures (NICs, EFA interfaces, GPUDirect RDMA). The stack
exports it; `accelfleet smoke` reads it and decides from it, not from the catalog again.

Fields added later (`region`, `project`, `host`, `network`) are optional: an inventory saved
before them still reads, and smoke falls back to the catalog for what it lacks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from fleet.catalog import Catalog, load_catalog
from fleet.errors import InputError
from fleet.gate import InventoryGate as InventoryGate
from fleet.gate import gate_toleration, routed_gate
from fleet.model import POOL_LABEL, Fleet, ResolvedPool
from fleet.quarantine_cap import parse_cap
from fleet.spec.fields import GATE_TOP_TIER, MODES, ON_FAIL, REPROVE_MAX_S, REPROVE_MIN_S

SCHEMA_VERSION = 1
# The Kueue queue (LocalQueue and ClusterQueue, fleet.routing.smoke_queue) `accelfleet smoke`
# submits to on a GKE queued-provisioning pool, whose nodes come only through Kueue's
# ProvisioningRequest admission check.
SMOKE_QUEUE = "accelfleet-smoke"
MAX_COUNT = 1_000_000  # nodes, devices, hosts or slices of one pool, far beyond any fleet
MAX_MEMORY_MIB = 2**30  # a node's memory: 1 PiB, far beyond any machine


@dataclass(frozen=True)
class InventoryHost:
    """One node: vCPUs and memory (catalog hosts.yaml), which size the smoke pod's requests."""

    vcpus: int
    memory_mib: int


@dataclass(frozen=True)
class InventoryNetwork:
    """A GPU fabric's figures per node (catalog `GpuNetworking` of the machine type): the NICs
    NCCL must use, the EFA interfaces a pod requests, whether EFA reads over RDMA
    (FI_EFA_USE_DEVICE_RDMA) and whether NCCL must use GPUDirect RDMA on it."""

    gpu_nics: int
    efa_interfaces: int = 0
    efa_rdma_read: bool = False
    efa_gdr: bool = False


@dataclass(frozen=True)
class InventoryPool:
    name: str
    team: str
    cloud: str
    runtime: str
    cluster: str | None
    accelerator: str
    kind: str
    machine_type: str
    nodes: int
    devices_per_node: int
    jax_devices_per_node: int
    hosts_per_slice: int
    slices: int
    topology: str | None
    resource: str
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, str]] = field(default_factory=list)
    zones: list[str] = field(default_factory=list)
    # The GPU fabric the pool was built with (catalog `Fabric` kind: tcpx, tcpxo, rdma, efa);
    # None without one, or with `fabric: off`.
    gpu_networking: str | None = None
    # The Kueue LocalQueue (in the smoke namespace) a smoke Job on this pool names; None: the
    # pool's nodes are there without Kueue (only GKE queued-provisioning pools need it).
    kueue_queue: str | None = None
    # Where the pool's nodes live: its cloud's region (`FleetSpec.region_of`) and, on GCP, the
    # project; smoke names them in its "get credentials" hints. None: an older inventory.
    region: str | None = None
    project: str | None = None
    # A node's vCPUs and memory; None: an older inventory, or a machine hosts.yaml lacks.
    host: InventoryHost | None = None
    # The GPU fabric's figures; None without one (or in an older inventory: the catalog's).
    network: InventoryNetwork | None = None
    # The pool's gate; None: an inventory from before the gate, or a pool that has no devices
    # (CPU pools are never gated). Read with `InventoryPool.gated`.
    gate: InventoryGate | None = None

    @property
    def gated(self) -> bool:
        """Whether the gate controller proves the pool's nodes (its gate is declared and on,
        enforcing or in shadow mode)."""
        return self.gate is not None and self.gate.enabled

    @property
    def gate_enforced(self) -> bool:
        """Whether the pool's new nodes carry the startup taint until proven (not shadow)."""
        return self.gate is not None and self.gate.enforced


@dataclass(frozen=True)
class Inventory:
    stack: str
    pools: tuple[InventoryPool, ...]
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "stack": self.stack,
            "pools": [asdict(p) for p in self.pools],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Inventory:
        if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
            raise InputError(
                "not an accelfleet inventory (schema_version 1 expected)",
                hint="export it with `pulumi stack output inventory --json > FILE`, or give "
                "the stack file instead of an inventory",
            )
        from pydantic import TypeAdapter, ValidationError

        from fleet.input_files import problems_in

        try:
            pools = tuple(TypeAdapter(list[InventoryPool]).validate_python(
                data.get("pools")))
        except ValidationError as exc:
            raise InputError(f"malformed inventory:\n{problems_in(exc, prefix='pools')}",
                             hint="regenerate it from the stack (`pulumi stack output "
                             "--json --show-secrets`)") from None
        for p in pools:
            counts = (p.nodes, p.devices_per_node, p.jax_devices_per_node, p.hosts_per_slice,
                      p.slices)
            if any(n < 0 or n > MAX_COUNT for n in counts):
                raise InputError(f"malformed inventory: pool {p.name!r} has a count outside "
                                 f"0..{MAX_COUNT:,} (nodes {p.nodes}, devices per node "
                                 f"{p.devices_per_node}, slices {p.slices})",
                                 hint="regenerate it from the stack")
            _check_figures(p)
        stack = data.get("stack", "")
        return cls(stack=stack if isinstance(stack, str) else "", pools=pools)

    def pool(self, name: str) -> InventoryPool:
        for p in self.pools:
            if p.name == name:
                return p
        raise InputError(f"no pool {name!r} in the inventory",
                         hint=f"pools: {', '.join(p.name for p in self.pools)}")


def _check_figures(p: InventoryPool) -> None:
    """A pool's node and fabric figures within bounds (a node has at least one vCPU)."""
    figures: list[tuple[str, int, int, int]] = []  # (field, value, least, most)
    if p.host is not None:
        figures += [("host.vcpus", p.host.vcpus, 1, MAX_COUNT),
                    ("host.memory_mib", p.host.memory_mib, 1, MAX_MEMORY_MIB)]
    if p.network is not None:
        figures += [("network.gpu_nics", p.network.gpu_nics, 0, MAX_COUNT),
                    ("network.efa_interfaces", p.network.efa_interfaces, 0, MAX_COUNT)]
    gate = p.gate
    if gate is not None:
        figures.append(("gate.max_tier", gate.max_tier, 0, GATE_TOP_TIER))
        if gate.reprove_interval_s is not None:
            figures.append(("gate.reprove_interval_s", gate.reprove_interval_s, REPROVE_MIN_S,
                            REPROVE_MAX_S))
        for field, cap in (("quarantine_cap", gate.quarantine_cap),
                           ("max_unavailable", gate.max_unavailable)):
            if parse_cap(cap) is None:
                raise InputError(f"malformed inventory: pool {p.name!r} has gate.{field} "
                                 f"{cap[:40]!r}, neither a count nor a percentage",
                                 hint="regenerate it from the stack")
        for field, text, accepted in (("mode", gate.mode, MODES),
                                      ("on_fail", gate.on_fail, ON_FAIL)):
            if text not in accepted:
                raise InputError(f"malformed inventory: pool {p.name!r} has gate.{field} "
                                 f"{text[:40]!r}, not one of {', '.join(accepted)}",
                                 hint="regenerate it from the stack")
    for name, value, least, most in figures:
        if not least <= value <= most:
            raise InputError(f"malformed inventory: pool {p.name!r} has {name} {value}, "
                             f"outside {least}..{most:,}", hint="regenerate it from the stack")


def inventory_pool(pool: ResolvedPool, catalog: Catalog, *, project: str | None = None
                   ) -> InventoryPool:
    """A pool's entry. A CPU pool (kind "cpu") has no device resource and no accelerator
    taint to tolerate; `accelfleet smoke` skips it. `project`: the GCP project (GCP pools)."""
    shape = pool.shape
    host = catalog.hosts.get(shape.machine_type)
    net = pool.networking
    if shape.kind == "cpu":
        resource, selector, tolerations = "", catalog.node_selector(shape), []
    else:
        kube = catalog.kube(shape)
        resource, selector = kube.resource, kube.node_selector
        tolerations = [kube.taint.as_toleration()]
    tolerations += [
        {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
        for t in pool.spec.taints
    ]
    if pool.flex_start and pool.cloud == "gcp":  # GKE taints flex-start / queued nodes
        tolerations.append(catalog.taints[("gcp", "flex_start")].as_toleration())
    if pool.gate_enforced:  # proof pods land on unproven nodes (the gate's startup taint)
        tolerations.append(gate_toleration())
    return InventoryPool(
        name=pool.name,
        team=pool.team,
        cloud=pool.cloud,
        runtime=pool.runtime,
        cluster=pool.cluster.name if pool.cluster else None,
        accelerator=shape.accelerator.key,
        kind=shape.kind,
        machine_type=shape.machine_type,
        nodes=pool.node_count,
        devices_per_node=shape.devices_per_host,
        jax_devices_per_node=shape.jax_devices_per_host,
        hosts_per_slice=shape.hosts,
        slices=pool.spec.multislice if shape.tpu else 1,
        topology=shape.topology_str or None,
        resource=resource,
        node_selector={**selector, POOL_LABEL: pool.name},
        tolerations=tolerations,
        zones=list(pool.spec.zones),
        gpu_networking=pool.networking.kind if pool.networking else None,
        kueue_queue=SMOKE_QUEUE if pool.cloud == "gcp" and pool.spec.capacity.queued else None,
        region=pool.region,
        project=project if pool.cloud == "gcp" else None,
        host=InventoryHost(host.vcpus, host.memory_mib) if host is not None else None,
        network=InventoryNetwork(net.gpu_nics, net.efa_interfaces, net.efa_rdma_read,
                                 net.efa_gdr) if net is not None else None,
        gate=pool.gate,
    )


def build_inventory(fleet: Fleet, stack: str, catalog: Catalog | None = None) -> Inventory:
    catalog = catalog or load_catalog()
    gcp = fleet.spec.clouds.gcp
    project = gcp.project if gcp is not None else None
    pools = []
    for p in fleet.pools:
        entry = inventory_pool(p, catalog, project=project)
        if entry.gate is not None and p.cluster is not None and entry.kueue_queue is None:
            queue, namespace = _team_queue(fleet, p.cluster.name, p.name, p.team)
            entry = replace(entry, gate=routed_gate(entry.gate, queue, namespace))
        pools.append(entry)
    return Inventory(stack=stack, pools=tuple(pools))


def _team_queue(fleet: Fleet, cluster: str, pool: str, team: str
                ) -> tuple[str | None, str | None]:
    """The LocalQueue (and namespace) of `pool`'s owner team on `cluster` that holds the pool's
    flavor as its own (fleet.routing); (None, None) where Kueue does not route the pool. A
    queued-provisioning pool is left out by the caller: its queue asks GKE for new nodes."""
    routing = fleet.cluster_routing(cluster)
    for q in routing.queues if routing is not None else ():
        if q.team == team and any(f.flavor == pool and not f.borrowed for f in q.flavors):
            return q.name, q.namespace or q.name
    return None, None
