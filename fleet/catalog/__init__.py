"""The accelerator catalog: data files loaded into frozen records, and the queries on them.

    >>> from fleet.catalog import load_catalog
    >>> cat = load_catalog()
    >>> cat.resolve("v5p-128").describe()
    'TPU v5p 4x4x4: 64 chips on 16 hosts of ct5p-hightpu-4t'

The name queries (resolve, the TPU slices, not_built) are in _names.py, the base of Catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from fleet.catalog._aws import (
    CapacityBlockPrice,
    EksAddonPins,
    load_capacity_block_prices,
    load_eks_addons,
)
from fleet.catalog._hosts import HostShape, load_hosts
from fleet.catalog._limits import (
    Bound,
    NameRule,
    NetworkFacts,
    Regions,
    load_limits,
    load_regions,
)
from fleet.catalog._load import (
    as_str_dict,
    image_ref_problem,
    load_accelerators,
    load_cpu_machines,
    load_fabrics,
    load_machines,
    load_prices,
    load_taints,
    load_tpu_network_mtu,
    load_tpus,
    read_yaml,
)
from fleet.catalog._names import _Names
from fleet.catalog._names import not_built as not_built
from fleet.catalog._zones import ZoneAnswer, ZoneOffers, load_zone_offers
from fleet.catalog.list_rate import list_usd
from fleet.catalog.records import (
    CLOUDS,
    HOURS_PER_MONTH,
    Accelerator,
    Cloud,
    Fabric,
    FabricDaemon,
    GkeNetwork,
    GpuNetworking,
    HostMount,
    Kind,
    MachineType,
    PodInterface,
    Price,
    Shape,
    SystemPoolDefaults,
    Taint,
    TpuGeneration,
)
from fleet.errors import CatalogError

__all__ = [
    "CLOUDS",
    "HOURS_PER_MONTH",
    "Accelerator",
    "Bound",
    "CapacityBlockPrice",
    "Catalog",
    "Cloud",
    "EksAddonPins",
    "Fabric",
    "FabricDaemon",
    "GkeNetwork",
    "GpuNetworking",
    "HostMount",
    "HostShape",
    "Kind",
    "KubeFacts",
    "MachineType",
    "NameRule",
    "NetworkFacts",
    "PodInterface",
    "Price",
    "Regions",
    "Shape",
    "SystemPoolDefaults",
    "Taint",
    "TpuGeneration",
    "ZoneAnswer",
    "ZoneOffers",
    "image_ref_problem",
    "load_catalog",
    "read_yaml",
]


@dataclass(frozen=True, slots=True)
class KubeFacts:
    """How a shape shows up in Kubernetes: its resource, selector labels and taint."""

    resource: str
    node_selector: dict[str, str]
    taint: Taint


class Catalog(_Names):
    """Every machine shape accelfleet knows, and the queries the rest of the tool uses."""

    def __init__(self) -> None:
        self.accelerators = load_accelerators()
        self.machines: dict[str, MachineType] = {}
        self.system_pools: dict[Cloud, SystemPoolDefaults] = {}
        self.cpu_ami_types: dict[str, str] = {}  # aws: `ami` family -> EKS AMI type, CPU nodes
        self._kube: dict[Cloud, dict[str, Any]] = {}
        self.taints: dict[tuple[Cloud, str], Taint] = {}
        self.ami_types: dict[str, str] = {}
        self.capacity_blocks_source = ""
        for cloud in CLOUDS:
            machines, data = load_machines(cloud, self.accelerators)
            self.machines.update(machines)
            cpu, self.system_pools[cloud] = load_cpu_machines(cloud, data, self.accelerators)
            if set(cpu) & set(self.machines):
                raise CatalogError(f"{cloud}.yaml: {sorted(set(cpu) & set(self.machines))} "
                                   "listed as both GPU and CPU machine types")
            self.machines.update(cpu)
            if "cpu_ami_types" in data:
                self.cpu_ami_types = as_str_dict(data["cpu_ami_types"])
            self._kube[cloud] = data.get("kubernetes", {})
            for kind, taint in load_taints(self._kube[cloud]).items():
                self.taints[(cloud, kind)] = taint
            if "ami_types" in data:
                self.ami_types = as_str_dict(data["ami_types"])
            if "capacity_blocks" in data:
                self.capacity_blocks_source = str(data["capacity_blocks"]["source"])
            if cloud == "aws":
                self.eks_addons: EksAddonPins = load_eks_addons(data.get("eks_addons"))
        self.tpus = load_tpus(self.accelerators)
        self.tpu_network_mtu: int = load_tpu_network_mtu()  # tpu.yaml `network`
        self.fabrics: dict[str, Fabric] = load_fabrics(
            {m.networking.kind: m.networking for m in self.machines.values() if m.networking})
        self.prices = {(p.cloud, p.machine): p for p in load_prices()}
        self.capacity_block_prices: dict[str, CapacityBlockPrice] = load_capacity_block_prices(
            read_yaml("prices.yaml").get("capacity_block_prices"))
        # What the clouds refuse: naming rules, upper bounds, address ranges, regions, zones.
        self.names, self.bounds, self.network = load_limits()
        self.regions: dict[Cloud, Regions] = load_regions()
        self.zone_offers: ZoneOffers = load_zone_offers()  # which zones offer each shape
        self._alias: dict[str, str] = {}
        for acc in self.accelerators.values():
            if acc.kind == "cpu":  # a CPU pool names its machine type, never just "cpu"
                continue
            for word in (acc.key, *acc.aliases):
                self._alias[word.lower()] = acc.key
        # A GKE label names its family's first machine type (nvidia-l4 -> g2-standard-12).
        self._gke_label: dict[str, str] = {}
        for m in self.machines.values():
            if m.gke_accelerator:
                self._gke_label.setdefault(m.gke_accelerator, m.name)
        self._tpu_names: dict[str, str] = {}
        for gen in self.tpus.values():
            acc = self.accelerators[gen.accelerator]
            for word in (gen.key, gen.accelerator, gen.tpu_api_name, gen.gke_accelerator,
                         *acc.aliases):
                self._tpu_names[word.lower()] = gen.key
        self._tpu_machine = {m: (g.key, chips) for g in self.tpus.values()
                             for chips, m in g.machine_types}
        # vCPUs and memory of one node of every machine type (Kueue quotas count them)
        self.hosts: dict[str, HostShape] = load_hosts(
            set(self.machines) | set(self._tpu_machine),
            {m.name: m.vcpus for m in self.machines.values() if m.vcpus})

    # -- listing ---------------------------------------------------------------------------
    def shapes(self, *, cloud: Cloud | None = None, kind: Kind | None = None) -> list[Shape]:
        """One shape per machine type: each GPU machine, each TPU machine type (single host)."""
        out: list[Shape] = []
        if kind in (None, "gpu"):
            out += [self.gpu_shape(m) for m in self.machines.values()
                    if cloud in (None, m.cloud) and m.gpus]
        if kind in (None, "tpu") and cloud in (None, "gcp"):
            for gen in self.tpus.values():
                for _chips, machine in gen.machine_types:
                    out.append(self.resolve(machine))
        if kind in (None, "cpu"):
            out += [self.gpu_shape(m) for m in self.machines.values()
                    if cloud in (None, m.cloud) and not m.gpus]
        return out

    # -- Kubernetes --------------------------------------------------------------------------
    def kube(self, shape: Shape) -> KubeFacts:
        """An accelerator shape's resource, selector and taint (a CPU shape has neither
        resource nor taint: use `node_selector`)."""
        if shape.kind == "cpu":
            raise CatalogError(f"{shape.machine_type} is a CPU machine type: no accelerator "
                               "resource or taint")
        facts = self._kube[shape.cloud][shape.kind]
        return KubeFacts(
            resource=facts["resource"],
            node_selector=self.node_selector(shape),
            taint=self.taints[(shape.cloud, shape.kind)],
        )

    def node_selector(self, shape: Shape) -> dict[str, str]:
        """The well-known node labels that select a shape's nodes (any kind)."""
        facts = self._kube[shape.cloud][shape.kind]
        selector: dict[str, str] = {}
        if shape.tpu is not None:
            selector[facts["accelerator_label"]] = shape.tpu.gke_accelerator
            selector[facts["topology_label"]] = shape.topology_str
        elif shape.machine is not None and shape.machine.gke_accelerator:
            selector[facts["accelerator_label"]] = shape.machine.gke_accelerator
        selector[facts["machine_label"]] = shape.cloud_machine_type
        return selector

    def host(self, shape: Shape) -> HostShape:
        """vCPUs and memory of one node (host) of a shape."""
        return self.hosts[shape.machine_type]

    def system_pool_defaults(self, cloud: Cloud) -> SystemPoolDefaults:
        """The system pool a cluster on `cloud` gets unless its spec overrides it."""
        return self.system_pools[cloud]

    def cpu_machine_names(self, cloud: Cloud) -> list[str]:
        return sorted(m.name for m in self.machines.values() if m.cloud == cloud and not m.gpus)

    def kube_section(self, cloud: Cloud, key: str) -> dict[str, str]:
        """A raw section of a cloud's Kubernetes facts (e.g. aws 'efa')."""
        return as_str_dict({k: v for k, v in self._kube[cloud][key].items() if k != "taint"})

    def zones_offering(self, shape: Shape, region: str) -> ZoneAnswer:
        """Which zones of `region` offer `shape`, as far as zones.yaml knows."""
        return self.zone_offers.answer(shape, region)

    # -- prices ------------------------------------------------------------------------------
    def price(self, shape: Shape) -> Price | None:
        if shape.tpu is not None:
            return self.prices.get(("gcp", shape.accelerator.key))
        return self.prices.get((shape.cloud, shape.machine_type))

    def hourly_usd(self, shape: Shape, *, spot: bool = False,
                   capacity_block: bool = False) -> float | None:
        """List price of one unit (a GPU machine, or a whole TPU slice) per hour. On an EC2
        Capacity Block, the block's rate, or None where the catalog has none (never the
        On-Demand price)."""
        if capacity_block:
            block = self.capacity_block_prices.get(shape.machine_type)
            return None if block is None else block.instance_hour_usd
        price = self.price(shape)
        per, _ = list_usd(price, "spot" if spot else "on-demand")
        if price is None or per is None:
            return None
        return per * shape.chips if price.unit == "chip_hour" else per

    def monthly_usd(self, shape: Shape, units: int, *, spot: bool = False,
                    capacity_block: bool = False) -> float | None:
        hourly = self.hourly_usd(shape, spot=spot, capacity_block=capacity_block)
        return None if hourly is None else hourly * units * HOURS_PER_MONTH


@cache
def load_catalog() -> Catalog:
    """The catalog shipped with accelfleet, loaded and checked once per process (the data
    files ship with the package and do not change under a running process; a `Catalog()` of
    its own reads them afresh). Treat it as read-only: every caller shares it."""
    return Catalog()
