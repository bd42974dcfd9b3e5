"""Which passive health signals a GPU part keeps (data/gpu_health.yaml, with its sources), and
which signal family each NVML group and DCGM exporter metric belongs to (issue 37).

    signals_of("l4")     -> frozenset({"ecc", "row_remap", "xid", "throttle"})
    signals_of("t4")     -> frozenset({"ecc", "retired_pages", "xid", "throttle"})
    signals_of("h100-80gb") also has "nvlink"; an unknown part: None (judge everything)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from fleet.catalog.records import Accelerator
from fleet.errors import CatalogError

ECC, ROW_REMAP, RETIRED_PAGES, NVLINK, XID, THROTTLE = (
    "ecc", "row_remap", "retired_pages", "nvlink", "xid", "throttle")
FAMILIES = (ECC, ROW_REMAP, RETIRED_PAGES, NVLINK, XID, THROTTLE)
EVERY_PART = frozenset({XID, THROTTLE})  # Xid events and clock event reasons: every GPU
WHERE = "fleet/catalog/data/gpu_health.yaml"

# the DCGM exporter's metric -> its family (names: NVIDIA/dcgm-exporter etc/default-counters.csv)
_METRIC_PREFIXES = (
    ("DCGM_FI_DEV_ECC_", ECC),
    ("DCGM_FI_DEV_RETIRED_", RETIRED_PAGES),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", ROW_REMAP),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", ROW_REMAP),
    ("DCGM_FI_DEV_ROW_REMAP_", ROW_REMAP),
    ("DCGM_FI_DEV_NVLINK_", NVLINK),
    ("DCGM_FI_DEV_XID_", XID),
    ("DCGM_EXP_XID_", XID),
)


def metric_signal(metric: str) -> str | None:
    """The family of a DCGM exporter metric; None for one no family covers."""
    return next((fam for prefix, fam in _METRIC_PREFIXES if metric.startswith(prefix)), None)


def attach(accelerators: dict[str, Accelerator], data: Mapping[str, Any]
           ) -> dict[str, Accelerator]:
    """`accelerators` with each listed GPU part's `health_signals` set from `data` (the
    parsed gpu_health.yaml); CatalogError on a part that is no GPU of them, listed twice, or
    without a source."""
    out = dict(accelerators)
    seen: set[str] = set()
    for raw in data.get("parts") or []:
        key = str(raw.get("key", ""))
        acc = out.get(key)
        if acc is None or acc.kind != "gpu":
            raise CatalogError(f"{WHERE}: {key!r} is no GPU of accelerators.yaml")
        if key in seen:
            raise CatalogError(f"{WHERE}: {key} is listed twice")
        seen.add(key)
        if not raw.get("source"):
            raise CatalogError(f"{WHERE} {key}: every part needs a source")
        fams = {f for f in (ECC, ROW_REMAP, RETIRED_PAGES) if _flag(raw, f, key)}
        if acc.nvlinks > 0:
            fams.add(NVLINK)
        out[key] = replace(acc, health_signals=tuple(sorted(fams | EVERY_PART)))
    return out


@lru_cache(maxsize=1)
def _parts() -> dict[str, frozenset[str]]:
    from fleet.catalog._load import load_accelerators

    return {k: frozenset(a.health_signals) for k, a in load_accelerators().items()
            if a.health_signals}


def _flag(raw: Any, name: str, key: str) -> bool:
    value = raw.get(name)
    if not isinstance(value, bool):
        raise CatalogError(f"{WHERE} {key}: {name} must be true or false, not {value!r}")
    return value


def signals_of(part: str | None) -> frozenset[str] | None:
    """The families `part` (an accelerator key) keeps; None when the catalog does not say
    (an unknown part, or none named): every signal is judged then."""
    if not part:
        return None
    return _parts().get(part)


def lacks(part: str | None) -> dict[str, str]:
    """family -> why it is not read on `part` (empty for an unknown part)."""
    have = signals_of(part)
    if have is None:
        return {}
    return lacking(str(part), have)


def lacking(part: str, have: Iterable[str]) -> dict[str, str]:
    """family -> why it is not read on `part`, which keeps `have` (the same words in the pod,
    from the Accelerator record it is handed: smoke.probes.gpu_health.lacks_of)."""
    kept = set(have)
    return {f: f"the catalog says {part} keeps no {f.replace('_', ' ')} counters ({WHERE})"
            for f in FAMILIES if f not in kept}
