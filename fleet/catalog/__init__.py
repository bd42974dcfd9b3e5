"""The accelerator catalog: data files loaded into frozen records, and the queries on them.

    >>> from fleet.catalog import load_catalog
    >>> cat = load_catalog()
    >>> cat.resolve("v5p-128").describe()
    'TPU v5p 4x4x4: 64 chips on 16 hosts of ct5p-hightpu-4t'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from math import prod
from typing import Any, NoReturn

from fleet.catalog import _tpu
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
from fleet.errors import CatalogError, InputError, UnknownNameError, suggest
from fleet.words import counted

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

_SLICE_BY_COUNT = re.compile(r"^(?P<gen>[a-z0-9-]+?)-(?P<count>\d+)$")
_SLICE_BY_TOPO = re.compile(r"^(?P<gen>[a-z0-9-]+?)[\s:/-]+(?P<topo>\d+(?:x\d+){1,2})$")


@dataclass(frozen=True, slots=True)
class KubeFacts:
    """How a shape shows up in Kubernetes: its resource, selector labels and taint."""

    resource: str
    node_selector: dict[str, str]
    taint: Taint


class Catalog:
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

    # -- names -------------------------------------------------------------------------
    def known_names(self) -> list[str]:
        names = set(self.machines) | set(self._alias) | set(self._gke_label)
        names |= set(self._tpu_names) | set(self._tpu_machine)
        return sorted(names)

    def accelerator(self, key: str) -> Accelerator:
        return self.accelerators[key]

    # -- resolution --------------------------------------------------------------------
    def resolve(
        self,
        words: str,
        *,
        cloud: Cloud | None = None,
        topology: str | None = None,
        single_host: bool = False,
    ) -> Shape:
        """Turn a user's words into one machine shape.

        Accepts a machine type ("a3-highgpu-8g", "p5.48xlarge", "ct5p-hightpu-4t"), a GKE
        accelerator label ("nvidia-h100-80gb"), an accelerator ("h100": the first machine that
        carries it, on `cloud` if given), or a TPU slice ("v5p-128", "v6e 2x4", "v5p" with
        `topology`). Raises UnknownNameError with the nearest names, or InputError.
        """
        text = " ".join(words.strip().lower().split())
        if not text:
            raise InputError("empty accelerator name", hint="name a machine type, e.g. h100")
        tpu = self._resolve_tpu(text, topology, single_host)
        if tpu is not None:
            if cloud not in (None, "gcp"):
                raise InputError(
                    f"{words!r} is a Cloud TPU; TPUs are offered on gcp only, not {cloud}",
                    hint="put the pool in a GKE cluster, or choose a GPU machine for "
                    f"{cloud} (`accelfleet catalog list --cloud {cloud}`)",
                )
            return tpu
        machine = self._resolve_machine(text, cloud)
        if topology and machine is None:
            self._unknown_tpu(words, text, cloud)
        if topology:
            raise InputError(
                f"{words!r} is not a TPU, so it takes no topology (got {topology!r})",
                hint="remove `topology`, or name a TPU generation such as v5p or v6e",
            )
        if machine is None:
            reason = not_built().get(text)
            if reason is not None:
                raise InputError(
                    f"{words!r} is a machine type accelfleet does not build: {reason}",
                    hint="choose one from `accelfleet catalog list"
                    + (f" --cloud {cloud}`" if cloud else "`")
                    + " (fleet/catalog/data/not_built.yaml says why each other is left out)")
            scope = f" on {cloud}" if cloud else ""
            raise UnknownNameError(
                f"accelerator or machine type{scope}", words, self._names_for(cloud)
            )
        if cloud is not None and machine.cloud != cloud:
            raise InputError(
                f"{words!r} is a {machine.cloud} machine type, not offered on {cloud}",
                hint=f"choose one from `accelfleet catalog list --cloud {cloud}`",
            )
        return self.gpu_shape(machine)

    def _unknown_tpu(self, words: str, text: str, cloud: Cloud | None) -> NoReturn:
        """A name the catalog does not know, given with a `topology`: a TPU was meant, so
        suggest the nearest TPU generations (v5q -> v5p), never "remove topology"."""
        generations = [g.key for g in self.tpus.values()]
        head = text.split()[0]
        near = suggest(head, generations) or suggest(head, self._tpu_names)
        if not near:
            scope = f" on {cloud}" if cloud else ""
            raise UnknownNameError(
                f"accelerator or machine type{scope}", words, self._names_for(cloud),
                hint=f"`topology` is set, so a TPU slice is meant: name its generation "
                f"({', '.join(generations)}); for a GPU pool, remove `topology` and see "
                "`accelfleet catalog list`")
        near = list(dict.fromkeys(self._tpu_names.get(n, n) for n in near))
        raise UnknownNameError(
            "TPU generation", words, generations, suggestions=near,
            hint=f"`topology` is set, so this pool is a TPU slice: write `accelerator: "
            f"{near[0]}` (TPU generations: {', '.join(generations)}); for a GPU pool, remove "
            "`topology`")

    def gpu_shape(self, machine: MachineType) -> Shape:
        return Shape(
            cloud=machine.cloud,
            accelerator=self.accelerators[machine.accelerator],
            machine_type=machine.name,
            devices_per_host=machine.gpus,
            machine=machine,
        )

    def _names_for(self, cloud: Cloud | None) -> list[str]:
        if cloud is None:
            return self.known_names()
        names = [m for m, mt in self.machines.items() if mt.cloud == cloud]
        names += [a for a, k in self._alias.items() if self._first_machine(k, cloud)]
        if cloud == "gcp":
            names += list(self._gke_label) + list(self._tpu_names) + list(self._tpu_machine)
        return sorted(set(names))

    def _first_machine(self, acc_key: str, cloud: Cloud | None) -> MachineType | None:
        for m in self.machines.values():
            if m.accelerator == acc_key and (cloud is None or m.cloud == cloud):
                return m
        return None

    def _resolve_machine(self, text: str, cloud: Cloud | None) -> MachineType | None:
        if text in self.machines:
            return self.machines[text]
        if text in self._gke_label:
            return self.machines[self._gke_label[text]]
        if text in self._alias:
            return self._first_machine(self._alias[text], cloud)
        return None

    def _resolve_tpu(self, text: str, topology: str | None, single_host: bool) -> Shape | None:
        if text in self._tpu_machine:
            gen_key, chips = self._tpu_machine[text]
            gen = self.tpus[gen_key]
            topo = _tpu.default_topology(gen, chips)
            if topology is None and topo is not None:
                return self.tpu_slice(gen.key, "x".join(map(str, topo)), single_host=True)
            return self.tpu_slice(gen.key, topology or "", single_host=True)
        if text in self._tpu_names:
            gen = self.tpus[self._tpu_names[text]]
            if topology is None:
                smallest = _tpu.topologies(gen)[0]
                topology = "x".join(map(str, smallest))
            return self.tpu_slice(gen.key, topology, single_host=single_host)
        m = _SLICE_BY_TOPO.match(text)
        if m and m["gen"] in self._tpu_names:
            if topology is not None and _tpu.parse_topology(topology) != _tpu.parse_topology(
                m["topo"]
            ):
                raise InputError(
                    f"{text!r} names topology {m['topo']} but `topology` says {topology}",
                    hint="give the topology once",
                )
            return self.tpu_slice(self._tpu_names[m["gen"]], m["topo"], single_host=single_host)
        m = _SLICE_BY_COUNT.match(text)
        if m and m["gen"] in self._tpu_names:
            gen = self.tpus[self._tpu_names[m["gen"]]]
            count = int(m["count"])
            per_chip = gen.name_units_per_chip
            chips, rest = divmod(count, per_chip)
            topo = _tpu.default_topology(gen, chips) if not rest else None
            if topo is None:
                raise InputError(
                    f"{text!r} is not a {gen.key} slice size ({gen.tpu_api_name} names count "
                    f"{gen.naming}, {per_chip} per chip)",
                    hint=f"valid sizes: {', '.join(self.slice_names(gen.key)[:12])}, ...",
                )
            if topology is not None and _tpu.normalise(gen, _tpu.parse_topology(topology) or ()
                                                      ) != topo:
                raise InputError(
                    f"{text!r} is topology {'x'.join(map(str, topo))}, but `topology` says "
                    f"{topology}",
                    hint="give either the slice name or the topology",
                )
            return self.tpu_slice(gen.key, "x".join(map(str, topo)), single_host=single_host)
        return None

    # -- TPU queries ---------------------------------------------------------------------
    def tpu_generation(self, name: str) -> TpuGeneration:
        key = self._tpu_names.get(name.lower())
        if key is None:
            raise UnknownNameError("TPU generation", name, self._tpu_names)
        return self.tpus[key]

    def topologies(self, generation: str) -> list[str]:
        gen = self.tpu_generation(generation)
        return ["x".join(map(str, t)) for t in _tpu.topologies(gen)]

    def slice_names(self, generation: str) -> list[str]:
        """Cloud TPU API names of every slice (v5p-8, v5p-16, ...)."""
        gen = self.tpu_generation(generation)
        sizes = sorted({prod(t) for t in _tpu.topologies(gen)})
        return [gen.api_name(chips) for chips in sizes]

    def tpu_slice(self, generation: str, topology: str, *, single_host: bool = False) -> Shape:
        """A TPU slice of a generation and topology; raises with the valid topologies."""
        gen = self.tpu_generation(generation)
        parsed = _tpu.parse_topology(topology)
        topo = _tpu.normalise(gen, parsed) if parsed else None
        if topo is None:
            valid = self.topologies(gen.key)
            shape = "AxB" if gen.dims == 2 else "AxBxC"
            raise UnknownNameError(
                f"{gen.key} topology ({shape})",
                topology,
                valid,
                suggestions=_nearest_topologies(valid, parsed),
                hint=f"valid {gen.key} topologies: {', '.join(valid[:14])}"
                + (", ..." if len(valid) > 14 else ""),
            )
        chips = prod(topo)
        hosts, per_host = _tpu.slice_hosts(gen, chips, single_host_machine=single_host)
        machine = gen.machine_for(per_host)
        if machine is None:
            raise InputError(
                f"no {gen.key} machine type carries {counted(per_host, 'chip')}",
                hint=f"{gen.key} machine types: "
                + ", ".join(f"{m} ({counted(c, 'chip')})" for c, m in gen.machine_types),
            )
        return Shape(
            cloud="gcp",
            accelerator=self.accelerators[gen.accelerator],
            machine_type=machine,
            devices_per_host=per_host,
            hosts=hosts,
            tpu=gen,
            topology=topo,
        )

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


def _nearest_topologies(valid: list[str], parsed: tuple[int, ...] | None) -> list[str]:
    """The valid topologies closest in chip count to what was asked."""
    if not parsed:
        return valid[:3]
    want = prod(parsed)
    return sorted(valid, key=lambda t: abs(prod(int(s) for s in t.split("x")) - want))[:3]


@cache
def not_built() -> dict[str, str]:
    """Machine types the catalog leaves out, lower case, each with why (not_built.yaml)."""
    data = read_yaml("not_built.yaml")
    out: dict[str, str] = {}
    for section in ("gcp", "aws"):
        for name, why in ((data.get(section) or {}).get("machine_types") or {}).items():
            out[str(name).lower()] = str(why)
    for name, why in (data.get("not_in_snapshot") or {}).items():
        out[str(name).lower()] = str(why)
    if any(not why.strip() for why in out.values()):
        raise CatalogError("not_built.yaml: every machine type left out says why")
    return out


@cache
def load_catalog() -> Catalog:
    """The catalog shipped with accelfleet, loaded and checked once per process (the data
    files ship with the package and do not change under a running process; a `Catalog()` of
    its own reads them afresh). Treat it as read-only: every caller shares it."""
    return Catalog()

