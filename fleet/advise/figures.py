"""The figures a run sees on a chip: effective TFLOP/s, GB/s and bus bandwidth.

Measured when the smoke history has runs for the accelerator, else the catalog's datasheet peak
times a documented efficiency (`fleet/catalog/data/advise.yaml`, each with its source):

    compute  measured: median matmul TFLOP/s x mfu / matmul_of_peak; datasheet: peak x mfu
    memory   measured: median copy GB/s;            datasheet: peak x memory_of_peak
    in-node  measured: median all-reduce bus GB/s;  datasheet: link GB/s x busbw_of_link

`fleet` never imports `smoke`: the CLI lends a `HistoryReader`, a function from an accelerator's
catalog key to its `MeasuredFigures` (or None when the history has no run of it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from fleet.catalog import Accelerator, MachineType
from fleet.errors import CatalogError

Origin = Literal["measured", "datasheet"]


@dataclass(frozen=True)
class MeasuredFigures:
    """Medians of an accelerator's recent smoke figures, per device."""

    tflops: float | None  # bf16 matmul TFLOP/s
    gbps: float | None  # memory copy GB/s (bytes read and written)
    runs: int  # smoke runs the medians are over
    node_busbw_gbps: float | None = None  # all-reduce bus bandwidth inside a node


HistoryReader = Callable[[str], MeasuredFigures | None]


@dataclass(frozen=True)
class KindEfficiency:
    mfu: float
    mfu_source: str
    matmul_of_peak: float
    matmul_source: str
    memory_of_peak: float
    memory_source: str


@dataclass(frozen=True)
class Link:
    gbps: float
    source: str


@dataclass(frozen=True)
class AdviseData:
    efficiency: dict[str, KindEfficiency]
    usable_memory_fraction: float
    usable_memory_source: str
    busbw_of_link: float
    busbw_source: str
    interconnect: dict[str, Link]  # accelerator key -> one-way GB/s per device in a node/slice
    fabric_network: dict[str, Link]  # gpu_networking kind -> Gbit/s per node
    machine_network: dict[str, Link]  # machine type -> Gbit/s per node
    default_network_per_gpu: Link
    tpu_dcn: dict[str, Link]  # accelerator key -> Gbit/s per chip
    default_tpu_dcn: Link


def _fraction(raw: dict[str, Any], key: str, where: str) -> float:
    value = raw.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 1:
        raise CatalogError(f"advise.yaml {where}.{key} must be a fraction in (0, 1], got "
                           f"{value!r}")
    return float(value)


def _links(items: list[dict[str, Any]], key: str, value: str) -> dict[str, Link]:
    out: dict[str, Link] = {}
    for item in items:
        name, gbps, source = item.get(key), item.get(value), item.get("source")
        if not isinstance(name, str) or not isinstance(gbps, int | float) or gbps <= 0 \
                or not source:
            raise CatalogError(f"advise.yaml: {item!r} needs `{key}`, a positive `{value}` "
                               "and a `source`")
        out[name] = Link(float(gbps), str(source))
    return out


@cache
def advise_data() -> AdviseData:
    """fleet/catalog/data/advise.yaml, checked: every accelerator it names is in the catalog."""
    from fleet.catalog import load_catalog, read_yaml

    raw = read_yaml("advise.yaml")
    eff = {kind: KindEfficiency(
        mfu=_fraction(e, "mfu", kind), mfu_source=str(e["mfu_source"]),
        matmul_of_peak=_fraction(e, "matmul_of_peak", kind),
        matmul_source=str(e["matmul_source"]),
        memory_of_peak=_fraction(e, "memory_of_peak", kind),
        memory_source=str(e["memory_source"])) for kind, e in raw["efficiency"].items()}
    net = raw["network"]
    data = AdviseData(
        efficiency=eff,
        usable_memory_fraction=_fraction(raw, "usable_memory_fraction", "top"),
        usable_memory_source=str(raw["usable_memory_source"]),
        busbw_of_link=_fraction(raw, "busbw_of_link", "top"),
        busbw_source=str(raw["busbw_source"]),
        interconnect=_links(raw["interconnect"], "accelerator", "allreduce_gbps"),
        fabric_network=_links(net["by_fabric"], "kind", "gbps_per_node"),
        machine_network=_links(net["by_machine"], "machine", "gbps_per_node"),
        default_network_per_gpu=Link(float(net["default_gbps_per_gpu"]),
                                     str(net["default_source"])),
        tpu_dcn=_links(net["tpu_dcn"], "accelerator", "gbps_per_chip"),
        default_tpu_dcn=Link(float(net["tpu_dcn_default_gbps_per_chip"]),
                             str(net["tpu_dcn_default_source"])))
    cat = load_catalog()
    for key in (*data.interconnect, *data.tpu_dcn):
        if key not in cat.accelerators:
            raise CatalogError(f"advise.yaml names accelerator {key!r}, not in the catalog")
    for key in data.machine_network:
        if key not in cat.machines:
            raise CatalogError(f"advise.yaml names machine type {key!r}, not in the catalog")
    return data


@dataclass(frozen=True)
class Effective:
    """What one device of an accelerator delivers to a step, and where each figure comes from."""

    accelerator: str
    tflops: float
    tflops_origin: Origin
    gbps: float
    gbps_origin: Origin
    node_busbw_gbps: float | None
    busbw_origin: Origin
    runs: int
    peak_tflops: float
    peak_gbps: float
    sources: tuple[str, ...]

    @property
    def origin(self) -> Origin:
        """"measured" when the compute figure (the one that bounds training) is measured."""
        return self.tflops_origin

    def words(self) -> str:
        if self.origin == "measured":
            return f"measured ({self.runs} run{'s' if self.runs != 1 else ''})"
        return "datasheet"


def effective(acc: Accelerator, reader: HistoryReader | None = None) -> Effective | None:
    """The effective figures of one device of `acc`; None when the catalog gives no peak
    (then nothing can be estimated)."""
    if acc.kind == "cpu" or not acc.bf16_tflops or not acc.memory_gbps:
        return None
    data = advise_data()
    e = data.efficiency[acc.kind]
    measured = reader(acc.key) if reader is not None else None
    sources = []
    t_origin: Origin
    g_origin: Origin
    b_origin: Origin
    if measured is not None and measured.tflops:
        tflops, t_origin = measured.tflops * e.mfu / e.matmul_of_peak, "measured"
        sources.append(f"compute: median matmul {measured.tflops:,.0f} TFLOP/s over "
                       f"{measured.runs} smoke runs x mfu {e.mfu:g} / matmul_of_peak "
                       f"{e.matmul_of_peak:g} ({e.matmul_source})")
    else:
        tflops, t_origin = acc.bf16_tflops * e.mfu, "datasheet"
        sources.append(f"compute: peak {acc.bf16_tflops:,g} TFLOP/s x mfu {e.mfu:g} "
                       f"({e.mfu_source})")
    if measured is not None and measured.gbps:
        gbps, g_origin = measured.gbps, "measured"
        sources.append(f"memory: median copy {measured.gbps:,.0f} GB/s over {measured.runs} "
                       "smoke runs")
    else:
        gbps, g_origin = acc.memory_gbps * e.memory_of_peak, "datasheet"
        sources.append(f"memory: peak {acc.memory_gbps:,g} GB/s x {e.memory_of_peak:g} "
                       f"({e.memory_source})")
    link = data.interconnect.get(acc.key)
    busbw: float | None
    if measured is not None and measured.node_busbw_gbps:
        busbw, b_origin = measured.node_busbw_gbps, "measured"
        sources.append(f"in-node all-reduce: median {busbw:,.0f} GB/s bus bandwidth")
    elif link is not None:
        busbw, b_origin = link.gbps * data.busbw_of_link, "datasheet"
        sources.append(f"in-node all-reduce: {link.gbps:,g} GB/s x {data.busbw_of_link:g} "
                       f"({link.source}; {data.busbw_source})")
    else:
        busbw, b_origin = None, "datasheet"
    return Effective(acc.key, tflops, t_origin, gbps, g_origin, busbw, b_origin,
                     measured.runs if measured is not None else 0, acc.bf16_tflops,
                     acc.memory_gbps, tuple(sources))


def node_network(machine: MachineType | None) -> Link:
    """A GPU machine's network to other machines, Gbit/s per machine."""
    data = advise_data()
    if machine is not None and machine.networking is not None \
            and machine.networking.kind in data.fabric_network:
        return data.fabric_network[machine.networking.kind]
    if machine is not None and machine.name in data.machine_network:
        return data.machine_network[machine.name]
    per_gpu = data.default_network_per_gpu
    return Link(per_gpu.gbps * (machine.gpus if machine is not None and machine.gpus else 1),
                per_gpu.source)


def tpu_dcn(acc: Accelerator) -> Link:
    """A TPU chip's share of the data-centre network between slices, Gbit/s."""
    data = advise_data()
    return data.tpu_dcn.get(acc.key, data.default_tpu_dcn)
