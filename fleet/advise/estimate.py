"""Time and cost per run of a workload on each candidate, ranked by cost per run.

Per candidate: the devices that hold the model (`chips_to_fit`), the devices the run takes
(at least the devices wanted, in whole machines or TPU slices), and a roofline step time:

    compute  = FLOPs of the step / (devices x effective TFLOP/s)
    memory   = bytes one device moves / effective GB/s
    network  = 2 (n - 1) / n x bytes all-reduced / bus bandwidth       (n devices, n > 1)
    step     = the largest of the three, named as the bound (the others are assumed to overlap)

Training is fully sharded data parallelism (ZeRO-3 / FSDP): the model state is spread over
every device and each step all-reduces the bf16 gradients once (FSDP's reduce-scatter and two
all-gathers move 1.5 times that: docs/advise.md). Inference is tensor-parallel replicas of the
fewest devices (a power of two) that hold the weights and the batch's KV cache; each batch runs
its prefill, then one decode step per output token. A run costs its hours times the units' rate
(list price, or the stack's own rate for a pool); a candidate with no price is "unpriced",
ranked after the priced ones by time, never costed at $0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fleet.advise.figures import Effective, HistoryReader, advise_data, effective
from fleet.advise.offers import Collective, Offer, Placement, collective, place
from fleet.advise.workload import Workload
from fleet.catalog import Catalog

Bound = Literal["compute", "memory", "network"]
GIB = 2**30


@dataclass(frozen=True)
class Roofline:
    compute_s: float
    memory_s: float
    network_s: float = 0.0

    @property
    def step_s(self) -> float:
        return max(self.compute_s, self.memory_s, self.network_s)

    @property
    def bound(self) -> Bound:
        times: dict[Bound, float] = {"compute": self.compute_s, "memory": self.memory_s,
                                     "network": self.network_s}
        return max(times, key=lambda k: times[k])

    def to_dict(self) -> dict[str, Any]:
        return {"step_s": self.step_s, "compute_s": self.compute_s, "memory_s": self.memory_s,
                "network_s": self.network_s, "bound": self.bound}


def _all_reduce_s(nbytes: float, devices: int, coll: Collective | None) -> float:
    if coll is None or devices <= 1 or nbytes <= 0:
        return 0.0
    return 2 * (devices - 1) / devices * nbytes / (coll.busbw_gbps * 1e9)


@dataclass(frozen=True)
class Estimate:
    """One candidate's estimate."""

    offer: Offer
    placement: Placement
    figures: Effective
    collective: Collective | None
    chips: int  # devices the run computes on
    chips_to_fit: int
    memory_per_chip_bytes: float
    usable_per_chip_bytes: float
    step: Roofline  # a training step, or an inference decode step
    run_s: float
    bound: Bound
    tokens_per_s_per_chip: float
    model_tflops_per_chip: float | None
    prefill: Roofline | None = None
    replicas: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def run_hours(self) -> float:
        return self.run_s / 3600

    @property
    def usd_per_run(self) -> float | None:
        usd = self.placement.usd_per_hour
        return None if usd is None else usd * self.run_hours

    @property
    def spot_usd_per_run(self) -> float | None:
        usd = self.placement.spot_usd_per_hour
        return None if usd is None else usd * self.run_hours

    def to_dict(self) -> dict[str, Any]:
        p, f, shape = self.placement, self.figures, self.placement.shape
        return {
            "candidate": self.offer.label, "pool": self.offer.pool.name if self.offer.pool
            else None, "cloud": shape.cloud, "kind": shape.kind,
            "machine_type": shape.machine_type, "accelerator": shape.accelerator.key,
            "accelerator_name": shape.accelerator.name, "topology": p.topology,
            "units": p.units, "nodes": p.nodes, "chips": self.chips,
            "chips_to_fit": self.chips_to_fit, "replicas": self.replicas,
            "memory_per_chip_gib": round(self.memory_per_chip_bytes / GIB, 2),
            "usable_memory_per_chip_gib": round(self.usable_per_chip_bytes / GIB, 2),
            "figures": {"origin": f.origin, "runs": f.runs,
                        "tflops": round(f.tflops, 1), "tflops_origin": f.tflops_origin,
                        "peak_tflops": f.peak_tflops, "gbps": round(f.gbps, 1),
                        "gbps_origin": f.gbps_origin, "peak_gbps": f.peak_gbps,
                        "busbw_gbps": None if self.collective is None
                        else round(self.collective.busbw_gbps, 1),
                        "busbw_hop": None if self.collective is None else self.collective.hop,
                        "busbw_origin": None if self.collective is None
                        else self.collective.origin, "sources": list(f.sources)},
            "step": self.step.to_dict(),
            "prefill": None if self.prefill is None else self.prefill.to_dict(),
            "bound": self.bound, "run_hours": round(self.run_hours, 4),
            "tokens_per_s_per_chip": round(self.tokens_per_s_per_chip, 2),
            "model_tflops_per_chip": None if self.model_tflops_per_chip is None
            else round(self.model_tflops_per_chip, 1),
            "usd_per_hour": _money(p.usd_per_hour), "usd_per_run": _money(self.usd_per_run),
            "spot_usd_per_hour": _money(p.spot_usd_per_hour),
            "spot_usd_per_run": _money(self.spot_usd_per_run), "price_source": p.price_source,
            "notes": list(self.notes),
        }


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


@dataclass(frozen=True)
class Excluded:
    """A candidate the workload cannot run on, and why."""

    label: str
    accelerator: str
    reason: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {"candidate": self.label, "accelerator": self.accelerator,
                "reason": self.reason, "fix": self.fix}


@dataclass(frozen=True)
class Advice:
    workload: Workload
    estimates: tuple[Estimate, ...]  # ranked: cheapest run first, unpriced last
    excluded: tuple[Excluded, ...]
    assumptions: tuple[str, ...] = field(default=())


def assumptions() -> tuple[str, ...]:
    data = advise_data()
    return (
        "roofline: a step takes the longest of its compute, memory and network times; the "
        "other two are assumed to overlap with it",
        "training: fully sharded data parallel (ZeRO-3 / FSDP) over every device; one "
        "all-reduce of the bf16 gradients per step (FSDP moves 1.5x that)",
        "inference: tensor-parallel replicas of the fewest devices (a power of two) that hold "
        "the bf16 weights and the batch's KV cache; prefill, then one decode step per token",
        f"a run fills at most {data.usable_memory_fraction:.0%} of a device's memory "
        f"({data.usable_memory_source})",
        f"collectives keep {data.busbw_of_link:.0%} of a link's nominal bandwidth "
        f"({data.busbw_source})",
        "datasheet figures: peak x an efficiency per kind of accelerator (fleet/catalog/data/"
        "advise.yaml, each with its source); measured figures: the smoke history's medians",
        "costs: hours x the rate of every machine or slice the run takes, whole; unpriced "
        "candidates are ranked after priced ones, never costed at $0",
    )


def advise(workload: Workload, offers: Sequence[Offer], cat: Catalog,
           reader: HistoryReader | None = None) -> Advice:
    """Estimate every offer; rank them by cost per run (unpriced last, by time)."""
    estimates: list[Estimate] = []
    excluded: list[Excluded] = []
    for offer in offers:
        result = estimate(workload, offer, cat, reader)
        if isinstance(result, Estimate):
            estimates.append(result)
        else:
            excluded.append(result)
    estimates.sort(key=lambda e: (e.usd_per_run is None, e.usd_per_run or 0.0, e.run_s,
                                  e.offer.label))
    return Advice(workload, tuple(estimates), tuple(excluded), assumptions())


def _fixed_per_chip(w: Workload) -> float:
    """Bytes every training device holds whatever the device count: activations of one
    micro-batch and the gathered layers."""
    if w.training is None:
        return 0.0
    return w.activation_bytes() + w.gathered_layer_bytes()


def _replica_bytes(w: Workload) -> float:
    return w.state_bytes() + w.kv_cache_bytes()


def _fit(w: Workload, usable: float) -> int | None:
    """The fewest devices that hold the workload; None when no number of them does."""
    if w.inference is not None and w.raw is None:
        need = math.ceil(_replica_bytes(w) / usable)
        return 1 << max(0, need - 1).bit_length()  # the next power of two
    fixed = _fixed_per_chip(w)
    if fixed >= usable:
        return None
    return max(1, math.ceil(w.state_bytes() / (usable - fixed)))


def _unfit(w: Workload, offer: Offer, usable: float) -> Excluded:
    acc = offer.shape.accelerator
    t = w.training
    assert t is not None
    act, gathered = w.activation_bytes() / GIB, w.gathered_layer_bytes() / GIB
    fixes = []
    if t.checkpointing != "full":
        fixes.append("set `activation_checkpointing: full`")
    if t.micro_batch_sequences > 1:
        fixes.append("set `micro_batch_sequences: 1`")
    fixes.append("shorten `sequence_length`, or choose an accelerator with more memory")
    return Excluded(offer.label, acc.key,
                    f"one micro-batch's activations ({act:,.1f} GiB, {t.checkpointing} "
                    f"recomputation) and the gathered layers ({gathered:,.1f} GiB) do not fit "
                    f"the {usable / GIB:,.1f} GiB a {acc.name} offers a run, whatever the "
                    "number of devices", "; ".join(fixes))


def _too_small(w: Workload, offer: Offer, fit: int, usable: float, most: int) -> Excluded:
    acc = offer.shape.accelerator
    fix = "raise the pool's nodes (or autoscaling max_nodes, or multislice), or choose a pool " \
          "whose devices have more memory"
    if w.inference is not None and w.raw is None:
        held = (f"{_replica_bytes(w) / GIB:,.0f} GiB of weights and KV cache, "
                f"{usable / GIB:,.1f} GiB usable on each")
    else:
        fixed = _fixed_per_chip(w)
        held = f"{w.state_bytes() / GIB:,.0f} GiB of model state"
        if fixed:
            held += (f", {(usable - fixed) / GIB:,.1f} GiB on each once its "
                     f"{fixed / GIB:,.1f} GiB of activations and gathered layers are in "
                     f"({usable / GIB:,.1f} GiB usable)")
            if w.training is not None and w.training.checkpointing != "full":
                fix = "set `activation_checkpointing: full` (fewer devices hold it), " + fix
        else:
            held += f", {usable / GIB:,.1f} GiB usable on each"
    return Excluded(offer.label, acc.key, f"needs at least {fit} {acc.name} devices to hold "
                    f"{held}; pool {offer.label} has at most {most}", fix)


def estimate(w: Workload, offer: Offer, cat: Catalog,
             reader: HistoryReader | None = None) -> Estimate | Excluded:
    """One candidate's estimate, or why the workload cannot run on it."""
    acc = offer.shape.accelerator
    eff = effective(acc, reader)
    if eff is None:
        return Excluded(offer.label, acc.key, f"the catalog has no bf16 peak or memory "
                        f"bandwidth for {acc.name}", "add its datasheet figures to "
                        "fleet/catalog/data/accelerators.yaml, or measure it with "
                        "`accelfleet smoke`")
    usable = acc.memory_gib * GIB * advise_data().usable_memory_fraction
    fit = _fit(w, usable)
    if fit is None:
        return _unfit(w, offer, usable)
    placement = place(cat, offer, max(w.devices, fit))
    if placement.chips < fit:
        return _too_small(w, offer, fit, usable, placement.chips)
    notes = list(w.notes)
    if fit > w.devices:
        notes.append(f"holding the model takes {fit} devices, more than the {w.devices} "
                     "wanted")
    if placement.chips > max(w.devices, fit) and placement.shape.tpu is not None:
        notes.append(f"a {placement.shape.topology_str} slice has {placement.shape.chips} chips "
                     f"and is taken whole: the run uses {placement.chips}")
    if offer.max_chips is not None and placement.chips < w.devices:
        notes.append(f"the pool has {placement.chips} devices at most, fewer than the "
                     f"{w.devices} wanted: the run uses them all")
    if w.inference is not None and w.raw is None:
        return _inference(w, offer, placement, eff, fit, usable, notes)
    return _training(w, offer, placement, eff, fit, usable, notes)


def _training(w: Workload, offer: Offer, placement: Placement, eff: Effective, fit: int,
              usable: float, notes: list[str]) -> Estimate:
    chips = placement.chips
    coll = collective(placement, chips, eff)
    flops = w.training_step_flops()
    step = Roofline(flops / (chips * eff.tflops * 1e12),
                    w.training_traffic_bytes(chips) / (eff.gbps * 1e9),
                    _all_reduce_s(w.gradient_bytes(), chips, coll))
    run_s = w.steps * step.step_s
    t = w.training
    if t is not None and t.global_batch_sequences < chips * t.micro_batch_sequences:
        notes.append(f"{t.global_batch_sequences} sequences a step over {chips} devices is "
                     "under one micro-batch each: it needs tensor, sequence or pipeline "
                     "parallelism, which this estimate does not model")
    tokens = w.total_tokens
    return Estimate(offer, placement, eff, coll, chips, fit,
                    w.state_bytes() / chips + _fixed_per_chip(w), usable, step, run_s,
                    step.bound, tokens / run_s / chips if tokens else 0.0,
                    flops / step.step_s / chips / 1e12, notes=tuple(notes))


def _inference(w: Workload, offer: Offer, placement: Placement, eff: Effective, fit: int,
               usable: float, notes: list[str]) -> Estimate:
    i, model = w.inference, w.model
    assert i is not None and model is not None
    replicas = placement.chips // fit
    coll = collective(placement, fit, eff)
    tflops, gbps = fit * eff.tflops * 1e12, fit * eff.gbps * 1e9
    prefill = Roofline(w.prefill_flops() / tflops, w.state_bytes() / gbps,
                       _all_reduce_s(w.decode_collective_bytes() * i.prompt_tokens, fit, coll))
    decode = Roofline(w.decode_step_flops() / tflops, w.decode_step_bytes() / gbps,
                      _all_reduce_s(w.decode_collective_bytes(), fit, coll))
    decoding_s = i.output_tokens * decode.step_s
    batch_s = prefill.step_s + decoding_s
    run_s = i.requests / (i.batch_sequences * replicas) * batch_s
    bound = decode.bound if decoding_s >= prefill.step_s else prefill.bound
    chips = replicas * fit
    if chips < placement.chips:
        notes.append(f"{placement.chips - chips} of the {placement.chips} devices are left "
                     f"idle: replicas take {fit} each")
    return Estimate(offer, placement, eff, coll, chips, fit, _replica_bytes(w) / fit, usable,
                    decode, run_s, bound, w.total_tokens / run_s / chips, None, prefill,
                    replicas, tuple(notes))
