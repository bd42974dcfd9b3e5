"""`accelfleet advise`: for a workload, the time and cost per run on each candidate accelerator.

Pure arithmetic over the catalog (peaks, list prices), the stack's own rates and, where the CLI
lends one, the smoke history's measured figures; no cloud call, no smoke import.

    from fleet.advise import advise, catalog_offers, load_workload
    from fleet.catalog import load_catalog

    cat = load_catalog()
    result = advise(load_workload("llama3-8b-pretrain"), catalog_offers(cat), cat)
    best = result.estimates[0]          # cheapest run first; `result.excluded` says why not

Modules: `workload` (the counts: parameters, FLOPs, bytes, with their sources), `profile`
(workload files and presets, strictly checked), `figures` (effective TFLOP/s, GB/s and bus
bandwidth: measured or datasheet), `offers` (candidates and their sizing), `estimate` (the
roofline, time and cost per run, ranking). docs/advise.md compares the estimates with published
measurements.
"""

from __future__ import annotations

from fleet.advise.estimate import Advice, Estimate, Excluded, Roofline, advise, estimate
from fleet.advise.figures import Effective, HistoryReader, MeasuredFigures, effective
from fleet.advise.offers import Offer, Placement, catalog_offers, pool_offers
from fleet.advise.profile import Preset, load_workload, parse_workload, preset_names, presets
from fleet.advise.workload import ModelShape, Workload

__all__ = [
    "Advice",
    "Effective",
    "Estimate",
    "Excluded",
    "HistoryReader",
    "MeasuredFigures",
    "ModelShape",
    "Offer",
    "Placement",
    "Preset",
    "Roofline",
    "Workload",
    "advise",
    "catalog_offers",
    "effective",
    "estimate",
    "load_workload",
    "parse_workload",
    "pool_offers",
    "preset_names",
    "presets",
]
