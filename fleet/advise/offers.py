"""Where a run can go, and how much of it a run takes: candidates and their sizing.

A candidate (`Offer`) is either a pool of a stack (its shape, its size at the most, and the rate
the stack pays for it, `fleet.pricing`) or a catalog shape (a GPU machine type in any number, or a
Cloud TPU generation in the slice a run needs, at list price). `place` turns the devices a run
wants into whole units of it: GPU machines, or TPU slices (several when one slice is too small:
a multislice). The bus bandwidth of a placement's all-reduce: inside a node (NVLink, PCIe) or a
slice (ICI); across GPU nodes the slower of that and the node's network (GPUDirect, EFA), since
NCCL's rings pass through both and move per node what its network carries; across TPU slices the
ICI phase and then the DCN phase (the slice's chips' DCN share together), one after the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import prod

from fleet.advise.figures import Effective, advise_data, node_network, tpu_dcn
from fleet.catalog import Catalog, Shape
from fleet.model import ResolvedPool
from fleet.pricing import capacity_kind


@dataclass(frozen=True)
class Offer:
    """A candidate: a pool of the stack, or a machine shape of the catalog."""

    label: str
    shape: Shape  # GPU: the machine; TPU: the pool's slice, or a slice of the generation
    pool: ResolvedPool | None = None

    @property
    def accelerator_key(self) -> str:
        return self.shape.accelerator.key

    @property
    def max_chips(self) -> int | None:
        """A pool's devices at its largest (autoscaling max, every slice); None: any number."""
        if self.pool is None:
            return None
        if self.shape.tpu is not None:
            return self.shape.chips * self.pool.spec.multislice
        return self.pool.node_range[1] * self.shape.devices_per_host


@dataclass(frozen=True)
class Placement:
    """The units a run takes of an offer, and what they cost an hour."""

    offer: Offer
    shape: Shape  # GPU: the machine; TPU: one slice
    units: int  # GPU machines, or TPU slices
    usd_per_hour: float | None  # all units together; None: unpriced
    spot_usd_per_hour: float | None
    price_source: str  # list, stack rate, capacity block, or why unpriced

    @property
    def chips(self) -> int:
        return self.shape.chips * self.units

    @property
    def nodes(self) -> int:
        return self.shape.hosts * self.units

    @property
    def topology(self) -> str | None:
        return self.shape.topology_str or None


def catalog_offers(cat: Catalog) -> list[Offer]:
    """Every GPU machine type, and every Cloud TPU generation (sized per run)."""
    offers = [Offer(s.machine_type, s) for s in cat.shapes(kind="gpu")]
    for gen in cat.tpus.values():
        offers.append(Offer(f"TPU {gen.key}", cat.resolve(gen.key)))
    return offers


def pool_offers(pools: list[ResolvedPool]) -> list[Offer]:
    """The accelerator pools (CPU pools carry none)."""
    return [Offer(p.name, p.shape, p) for p in pools if p.shape.kind != "cpu"]


def place(cat: Catalog, offer: Offer, chips: int) -> Placement:
    """Whole units of `offer` for at least `chips` devices (fewer when a pool is smaller)."""
    if offer.shape.tpu is not None and offer.pool is None:
        return _tpu_slices(cat, offer, chips)
    shape = offer.shape
    units = max(1, math.ceil(chips / shape.chips))
    pool = offer.pool
    if pool is not None:
        most = (pool.spec.multislice if shape.tpu is not None else pool.node_range[1])
        units = min(units, max(most, 1))
        return _pool_price(cat, offer, units)
    return Placement(offer, shape, units, _times(cat.hourly_usd(shape), units),
                     _times(cat.hourly_usd(shape, spot=True), units), _list_source(cat, shape))


def _times(usd: float | None, units: int) -> float | None:
    return None if usd is None else usd * units


def _list_source(cat: Catalog, shape: Shape) -> str:
    price = cat.price(shape)
    if price is None or price.on_demand_usd is None:
        return "unpriced: " + (price.note if price is not None else "no list price")
    return f"list ({price.region}, {price.as_of})"


def _pool_price(cat: Catalog, offer: Offer, units: int) -> Placement:
    """A pool's units at the rate the stack pays for the pool (`fleet.pricing`), and at list
    spot."""
    pool, shape = offer.pool, offer.shape
    assert pool is not None
    cost = pool.cost
    nodes = shape.hosts * units
    rate = None if cost is None else cost.usd_per_node_hour
    if cost is None or rate is None:
        source = "unpriced" + (f": {cost.detail}" if cost is not None and cost.detail else "")
    else:
        source = f"{cost.source} ({cost.detail})" if cost.detail else cost.source
    usd = None if rate is None else rate * nodes
    # a spot pool's spot figure is what it costs (fleet.pricing: its stack rate or list spot)
    spot = usd if capacity_kind(pool.spec.capacity) == "spot" else _times(
        cat.hourly_usd(shape, spot=True), units)
    return Placement(offer, shape, units, usd, spot, source)


def _tpu_slices(cat: Catalog, offer: Offer, chips: int) -> Placement:
    """The smallest slice of the generation with `chips` chips; beyond the largest slice,
    the fewest identical slices that hold them (a multislice)."""
    gen = offer.shape.tpu
    assert gen is not None
    sizes = sorted(((prod(int(d) for d in t.split("x")), t) for t in cat.topologies(gen.key)),
                   key=lambda pair: pair[0])
    largest = sizes[-1][0]
    units = max(1, math.ceil(chips / largest))
    per_slice = math.ceil(chips / units)
    topology = next(t for n, t in sizes if n >= per_slice)
    shape = cat.tpu_slice(gen.key, topology)
    return Placement(offer, shape, units, _times(cat.hourly_usd(shape), units),
                     _times(cat.hourly_usd(shape, spot=True), units), _list_source(cat, shape))


@dataclass(frozen=True)
class Collective:
    """The bus bandwidth an all-reduce over a placement gets, and its slowest hop."""

    busbw_gbps: float
    hop: str  # in words: "NVLink", "ICI", "network (tcpxo, 1,600 Gbit/s per node)"
    origin: str  # measured | datasheet | assumption


def collective(placement: Placement, chips: int, eff: Effective) -> Collective | None:
    """How an all-reduce over `chips` devices of `placement` runs; None for one device."""
    if chips <= 1:
        return None
    data = advise_data()
    shape = placement.shape
    per_unit = shape.chips
    inner = eff.node_busbw_gbps
    tpu = shape.tpu is not None
    inner_words = "ICI" if tpu else ("NVLink" if (inner or 0) > 64 else "PCIe")
    if tpu:
        if chips <= per_unit or placement.units == 1:
            return _inner(inner, inner_words, eff)
        # XLA reduces over ICI inside each slice, then the slices' shards over DCN, one after
        # the other: the two phases' times add up.
        link = tpu_dcn(shape.accelerator)
        outer = per_unit * link.gbps / 8 * data.busbw_of_link
        inside = _inner(inner, inner_words, eff)
        return Collective(1 / (1 / inside.busbw_gbps + 1 / outer),
                          f"ICI, then DCN between slices ({link.gbps:g} Gbit/s per chip)",
                          "assumption" if link.source.startswith("assumption") else "datasheet")
    else:
        if chips <= shape.devices_per_host:
            return _inner(inner, inner_words, eff)
        link = node_network(shape.machine)
        outer = link.gbps / 8 * data.busbw_of_link
        kind = shape.networking.kind if shape.networking else "no GPU fabric"
        words = f"network between nodes ({kind}, {link.gbps:,g} Gbit/s per node)"
    # NCCL's rings run through every GPU: the slower of NVLink and the network sets the pace.
    origin = "assumption" if link.source.startswith("assumption") else "datasheet"
    if shape.devices_per_host > 1 and inner is not None and inner < outer:
        return _inner(inner, inner_words, eff)
    return Collective(outer, words, origin)


PCIE_GEN4_GBPS = 32.0  # one way, x16: the fallback for a device with no interconnect figure


def _inner(busbw: float | None, words: str, eff: Effective) -> Collective:
    if busbw is None:
        return Collective(PCIE_GEN4_GBPS * advise_data().busbw_of_link, "PCIe (assumed)",
                          "assumption")
    return Collective(busbw, words, eff.busbw_origin)
