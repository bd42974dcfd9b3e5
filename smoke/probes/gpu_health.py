"""Passive GPU health signals (T0): what NVML already counts, judged before a proof passes.

A GPU can compute the right answer at full speed while its memory degrades: uncorrectable ECC
errors, rows the driver remapped (or failed to), pages retired or waiting to be, NVLink links
that replay and recover. None of it shows in a matmul; NVML counts all of it. T0 reads, per GPU:

- ECC (nvmlDeviceGetTotalEccErrors): volatile (since the driver loaded) and aggregate
  (lifetime) counts, corrected (single bit, SBE) and uncorrected (double bit, DBE);
- row remapping, A100 and later (nvmlDeviceGetRemappedRows: correctable and uncorrectable
  rows, pending, failure occurred);
- page retirement, up to Volta (nvmlDeviceGetRetiredPages for each cause,
  nvmlDeviceGetRetiredPagesPendingStatus);
- clock event ("throttle") reasons now (nvmlDeviceGetCurrentClocksEventReasons, the older
  nvmlDeviceGetCurrentClocksThrottleReasons), judged as the sustained phase judges them
  (smoke.probes._telemetry.THROTTLE_REASONS);
- Xid events: NVML gives them only as they happen (nvmlEventSetCreate,
  nvmlDeviceRegisterEvents with nvmlEventTypeXidCriticalError, nvmlEventSetWait_v2); the ones
  raised while T0 listens are judged, those since boot are in the kernel log, not in NVML.
NVLink's data-link counters (replay, recovery, CRC) are read by the NVLink probe
(smoke.probes.nvlink), per link; their rules are in RULES too.

Each signal is judged by a rule of RULES, each with its source (NVIDIA DCGM's health watches,
the rule the DCGM exporter's users alert on). A call NVML does not have on this GPU or driver
(NVML_ERROR_NOT_SUPPORTED, an older nvidia-ml-py without the function) is `skipped` with the
reason, never counted as healthy. Standard library only: it runs in the pod.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from smoke.probes._telemetry import THROTTLE_REASONS
from smoke.probes.names import GPU_HEALTH
from smoke.probes.results import ProbeResult, Verdict, worst

T0 = 0
# NVIDIA/DCGM@72fa3feaa67d716a75323a8f47c34ff3ee73f824 (read 2026-11-28):
# modules/health/DcgmHealthWatch.cpp and common/DcgmGPUHardwareLimits.h
_DCGM = "NVIDIA/DCGM@72fa3fea:modules/health/DcgmHealthWatch.cpp"
_DCGM_LIMITS = "NVIDIA/DCGM@72fa3fea:common/DcgmGPUHardwareLimits.h"
DCGM_MAX_RETIRED_PAGES = 63  # DCGM_LIMIT_MAX_RETIRED_PAGES
DCGM_MAX_RETIRED_PAGES_SOFT = 15  # DCGM_LIMIT_MAX_RETIRED_PAGES_SOFT_LIMIT (DBE)
DCGM_MAX_ROW_REMAP_UNCORRECTABLE = 512  # DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE
DCGM_MAX_NVLINK_CRC_PER_S = 100.0  # DCGM_LIMIT_MAX_NVLINK_CRC_ERROR ("per second", RM)
AS_OF = "2026-11-28"


@dataclass(frozen=True, slots=True)
class HealthRule:
    """When one signal fails or warns, and where that comes from."""

    signal: str
    what: str
    verdict: Verdict
    at_least: int  # the signal's count (or flag, 1) from which the verdict holds
    source: str
    as_of: str = AS_OF


RULES: tuple[HealthRule, ...] = (
    HealthRule("ecc_dbe_volatile", "uncorrectable (double-bit) ECC errors since the driver "
               "loaded", Verdict.FAIL, 1, f"{_DCGM} MonitorMem: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL "
               "> 0 is FAIL (DCGM_FR_VOLATILE_DBE_DETECTED)"),
    HealthRule("ecc_dbe_aggregate", "uncorrectable (double-bit) ECC errors in the GPU's life",
               Verdict.WARN, 1, "DCGM judges the volatile count only; a lifetime count says "
               "the memory failed once: warn, the remapped rows / retired pages say whether "
               "it was contained"),
    HealthRule("ecc_sbe_volatile", "corrected (single-bit) ECC errors since the driver loaded",
               Verdict.PASS, 0, f"{_DCGM} MonitorMem judges no SBE count (DCGM_LIMIT_MAX_SBE_"
               f"RATE in {_DCGM_LIMITS} is a placeholder, 'dummy value'): recorded only"),
    HealthRule("row_remap_failure", "a row remapping failed (the spare rows of a bank are "
               "used up)", Verdict.FAIL, 1, f"{_DCGM} MonitorMem: DCGM_FI_DEV_ROW_REMAP_FAILED "
               "> 0 is FAIL (DCGM_FR_ROW_REMAP_FAILURE)"),
    HealthRule("row_remap_uncorrectable", "rows remapped for uncorrectable errors",
               Verdict.WARN, DCGM_MAX_ROW_REMAP_UNCORRECTABLE, f"{_DCGM} MonitorMem: "
               f"DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL >= {DCGM_MAX_ROW_REMAP_UNCORRECTABLE} "
               f"(DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE, {_DCGM_LIMITS}) is WARN"),
    HealthRule("row_remap_pending", "a row remapping waits for a GPU reset", Verdict.WARN, 1,
               "NVIDIA's A100 memory error management (docs.nvidia.com/deploy/a100-gpu-mem-"
               "error-mgmt): a pending remap takes effect at the next GPU reset; DCGM warns on "
               f"the same state for pages ({_DCGM}: retired pages pending is WARN)"),
    HealthRule("retired_pages_pending", "pages wait to be retired at the next driver load",
               Verdict.WARN, 1, f"{_DCGM} MonitorMem: DCGM_FI_DEV_RETIRED_PENDING != 0 is WARN "
               "(DCGM_FR_PENDING_PAGE_RETIREMENTS)"),
    HealthRule("retired_pages_total", "pages retired (single- and double-bit causes)",
               Verdict.FAIL, DCGM_MAX_RETIRED_PAGES, f"{_DCGM} MonitorMem: SBE + DBE retired "
               f">= {DCGM_MAX_RETIRED_PAGES} (DCGM_LIMIT_MAX_RETIRED_PAGES) is FAIL"),
    HealthRule("retired_pages_dbe", "pages retired for double-bit errors", Verdict.WARN,
               DCGM_MAX_RETIRED_PAGES_SOFT + 1, f"{_DCGM} MonitorMem: DBE retired > "
               f"{DCGM_MAX_RETIRED_PAGES_SOFT} fails where more than one was retired in the "
               "last week; one reading cannot see the week: warn"),
    HealthRule("nvlink_replay", "NVLink data-link replays", Verdict.WARN, 1,
               f"{_DCGM} MonitorNVLink: an increase >= 1 (DCGM_LIMIT_MAX_NVLINK_ERROR) of "
               "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL during the watch is FAIL; a count since "
               "the driver loaded has no window: warn (the exporter's increase between proofs "
               "fails, smoke.gate.signals)"),
    HealthRule("nvlink_recovery", "NVLink link recoveries", Verdict.WARN, 1,
               f"{_DCGM} MonitorNVLink: an increase >= 1 of DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_"
               "TOTAL during the watch is FAIL; a count since the driver loaded: warn"),
    HealthRule("nvlink_crc", "NVLink CRC errors (flit and data)", Verdict.WARN, 1,
               f"{_DCGM} MonitorNVLink: CRC errors fail only at >= {DCGM_MAX_NVLINK_CRC_PER_S:g} "
               "per second (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR), any other increase warns"),
    HealthRule("xid_critical", "an Xid DCGM counts as devastating (48 DBE, 74 NVLink, 79 "
               "fallen off the bus, 95 uncontained, 119/120 GSP, 140 ECC unrecovered)",
               Verdict.FAIL, 1, f"{_DCGM} BuildXidMappings: m_devastatingXids are FAIL"),
    HealthRule("xid_other", "any other Xid (31 MMU, 43, 63/64 row remap, 94 contained ...)",
               Verdict.WARN, 1, f"{_DCGM} BuildXidMappings: the subsystem Xids are WARN"),
    HealthRule("throttle", "a clock event reason active at idle (HW slowdown, thermal, power "
               "brake)", Verdict.FAIL, 1, "Azure/azurehpc-health-checks@6f50b1f customTests/"
               "azure_gpu_clock_throttling.nhc (smoke.probes._telemetry.THROTTLE_REASONS)"),
)
RULE = {r.signal: r for r in RULES}
# DCGM's devastating Xids (BuildXidMappings m_devastatingXids); 94 (contained) is WARN there
XID_CRITICAL = frozenset({48, 74, 79, 95, 119, 120, 140})

# nvml.h: nvmlMemoryErrorType_t, nvmlEccCounterType_t, nvmlPageRetirementCause_t, event types
NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1
NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC = 0, 1
NVML_PAGE_RETIREMENT_CAUSE_SBE, NVML_PAGE_RETIREMENT_CAUSE_DBE = 0, 1
NVML_EVENT_TYPE_XID_CRITICAL = 0x0000000000000008  # nvmlEventTypeXidCriticalError
XID_WAIT_MS = 50  # how long T0 listens for Xid events (they come only as they happen)


@dataclass
class GpuSignals:
    """What NVML counted on one GPU; None: not read (see `skipped`)."""

    index: int
    name: str = ""
    ecc_sbe_volatile: int | None = None
    ecc_dbe_volatile: int | None = None
    ecc_sbe_aggregate: int | None = None
    ecc_dbe_aggregate: int | None = None
    row_remap_correctable: int | None = None
    row_remap_uncorrectable: int | None = None
    row_remap_pending: bool | None = None
    row_remap_failure: bool | None = None
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None
    throttle_mask: int | None = None
    xids: list[int] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # signal group -> why

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"NVML: {text}"


def read_gpu(nvml: ModuleType | Any, index: int, handle: Any) -> GpuSignals:
    """One GPU's signals through `nvml` (pynvml, or a stand-in with its functions)."""
    g = GpuSignals(index)
    try:
        name = nvml.nvmlDeviceGetName(handle)
        g.name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        g.name = ""

    def call(group: str, fn_name: str, *args: Any) -> Any:
        fn: Callable[..., Any] | None = getattr(nvml, fn_name, None)
        if fn is None:
            g.skipped.setdefault(group, f"this nvidia-ml-py has no {fn_name}")
            return None
        try:
            return fn(handle, *args)
        except nvml.NVMLError as exc:  # Not Supported on this GPU, no permission, ...
            g.skipped.setdefault(group, f"{fn_name}: {_why(exc)}")
            return None

    for attr, etype, ctype in (
            ("ecc_sbe_volatile", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC),
            ("ecc_dbe_volatile", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC),
            ("ecc_sbe_aggregate", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC),
            ("ecc_dbe_aggregate", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC)):
        v = call("ecc", "nvmlDeviceGetTotalEccErrors", etype, ctype)
        setattr(g, attr, None if v is None else int(v))
    rows = call("row_remap", "nvmlDeviceGetRemappedRows")
    if rows is not None:
        corr, unc, pending, failed = rows
        g.row_remap_correctable, g.row_remap_uncorrectable = int(corr), int(unc)
        g.row_remap_pending, g.row_remap_failure = bool(pending), bool(failed)
    for attr, cause in (("retired_pages_sbe", NVML_PAGE_RETIREMENT_CAUSE_SBE),
                        ("retired_pages_dbe", NVML_PAGE_RETIREMENT_CAUSE_DBE)):
        pages = call("retired_pages", "nvmlDeviceGetRetiredPages", cause)
        setattr(g, attr, None if pages is None else len(pages))
    pending = call("retired_pages", "nvmlDeviceGetRetiredPagesPendingStatus")
    g.retired_pages_pending = None if pending is None else bool(pending)
    fn_name = ("nvmlDeviceGetCurrentClocksEventReasons"
               if hasattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons")
               else "nvmlDeviceGetCurrentClocksThrottleReasons")
    mask = call("throttle", fn_name)
    g.throttle_mask = None if mask is None else int(mask)
    return g


def listen_xids(nvml: ModuleType | Any, handles: Sequence[Any], wait_ms: int = XID_WAIT_MS,
                ) -> tuple[dict[int, list[int]], str]:
    """The Xid events NVML raises while T0 listens: {GPU index: [xid, ...]}, and "" or why
    none could be listened for (NVML has no history: the kernel log holds those since boot)."""
    needed = ("nvmlEventSetCreate", "nvmlDeviceRegisterEvents", "nvmlEventSetWait_v2",
              "nvmlEventSetFree")
    if any(not hasattr(nvml, n) for n in needed):
        return {}, "this nvidia-ml-py has no event set (nvmlEventSetWait_v2)"
    out: dict[int, list[int]] = {}
    try:
        events = nvml.nvmlEventSetCreate()
    except nvml.NVMLError as exc:
        return {}, f"nvmlEventSetCreate: {_why(exc)}"
    try:
        by_handle = {}
        for i, h in enumerate(handles):
            try:
                nvml.nvmlDeviceRegisterEvents(h, NVML_EVENT_TYPE_XID_CRITICAL, events)
                by_handle[id(h)] = i
            except nvml.NVMLError as exc:
                return {}, f"nvmlDeviceRegisterEvents: {_why(exc)}"
        while True:
            try:
                data = nvml.nvmlEventSetWait_v2(events, wait_ms)
            except nvml.NVMLError:  # NVML_ERROR_TIMEOUT: nothing more
                break
            i = by_handle.get(id(data.device), -1)
            out.setdefault(i, []).append(int(data.eventData))
            wait_ms = 0
    finally:
        nvml.nvmlEventSetFree(events)
    return out, ""


def read_all(nvml: ModuleType | Any | None = None) -> tuple[list[GpuSignals], str]:
    """Every GPU's signals through pynvml (or `nvml`, a stand-in); "" or why none."""
    if nvml is None:
        try:
            nvml = importlib.import_module("pynvml")  # nvidia-ml-py, where the image has it
        except ImportError:
            return [], "pynvml (nvidia-ml-py) not installed"
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return [], f"nvmlInit: {_why(exc)}"
    try:
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        gpus = [read_gpu(nvml, i, h) for i, h in enumerate(handles)]
        xids, why = listen_xids(nvml, handles)
        for g in gpus:
            g.xids = xids.get(g.index, [])
            if why:
                g.skipped.setdefault("xid", why)
        return gpus, ""
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def judge_gpu(g: GpuSignals) -> list[tuple[Verdict, str, str]]:
    """(verdict, signal, text) for each rule `g` breaks; nothing for a healthy GPU."""
    out: list[tuple[Verdict, str, str]] = []

    def check(signal: str, value: int | bool | None, shown: str = "") -> None:
        rule = RULE[signal]
        if value is None or rule.verdict is Verdict.PASS:
            return
        if int(value) >= rule.at_least:
            out.append((rule.verdict, signal, f"{shown or value} {rule.what}"))

    check("ecc_dbe_volatile", g.ecc_dbe_volatile)
    if not g.ecc_dbe_volatile:
        check("ecc_dbe_aggregate", g.ecc_dbe_aggregate)
    check("row_remap_failure", g.row_remap_failure, "yes:")
    check("row_remap_uncorrectable", g.row_remap_uncorrectable)
    check("row_remap_pending", g.row_remap_pending, "yes:")
    check("retired_pages_pending", g.retired_pages_pending, "yes:")
    if g.retired_pages_sbe is not None or g.retired_pages_dbe is not None:
        check("retired_pages_total", (g.retired_pages_sbe or 0) + (g.retired_pages_dbe or 0))
    check("retired_pages_dbe", g.retired_pages_dbe)
    for xid in g.xids:
        signal = "xid_critical" if xid in XID_CRITICAL else "xid_other"
        out.append((RULE[signal].verdict, signal, f"Xid {xid}: {RULE[signal].what}"))
    if g.throttle_mask:
        for bit, name, verdict in THROTTLE_REASONS:
            if g.throttle_mask & bit and verdict is not Verdict.PASS:
                out.append((verdict, "throttle", f"clock event reason '{name}' active"))
    return out


_FIELDS = {"ecc": ("ecc_sbe_volatile", "ecc_dbe_volatile", "ecc_sbe_aggregate",
                   "ecc_dbe_aggregate"),
           "row_remap": ("row_remap_correctable", "row_remap_uncorrectable",
                         "row_remap_pending", "row_remap_failure"),
           "retired_pages": ("retired_pages_sbe", "retired_pages_dbe", "retired_pages_pending")}


_FAMILIES = ("ecc", "row_remap", "retired_pages", "nvlink", "xid", "throttle")
_HEALTH_DATA = "fleet/catalog/data/gpu_health.yaml"


def lacks_of(key: str, health_signals: Sequence[str]) -> dict[str, str]:
    """group -> why it is not read on the part `key` that keeps `health_signals` (its catalog
    record's, handed to the pod in its Expectation); {} where the catalog does not say."""
    if not health_signals:
        return {}
    return {f: f"the catalog says {key} keeps no {f.replace('_', ' ')} counters "
               f"({_HEALTH_DATA})" for f in _FAMILIES if f not in health_signals}


def only_kept(g: GpuSignals, lacks: Mapping[str, str]) -> GpuSignals:
    """`g` with the signal groups its part does not keep (`lacks`: group -> why, from the
    catalog, fleet.catalog.health.lacks) unread and skipped with the catalog's reason: an
    Ampere part's retired-page calls answer zeros, not the state of its memory."""
    for group, why in lacks.items():
        for attr in _FIELDS.get(group, ()):
            setattr(g, attr, None)
        if group in _FIELDS:
            g.skipped[group] = why
    return g


def judge(gpus: Sequence[GpuSignals], why_none: str = "",
          device_of: Mapping[int, str] | None = None,
          lacks: Mapping[str, str] | None = None) -> list[ProbeResult]:
    """One result per GPU (its device name from `device_of`, else `gpu<i>`): FAIL or WARN
    naming every signal over its rule, PASS with the counts read, SKIPPED when NVML gave
    nothing; what NVML lacked is in the details (`skipped`), never read as healthy. `lacks`:
    the groups the GPU part does not keep (the catalog's word), skipped with its reason."""
    gpus = [only_kept(g, lacks) for g in gpus] if lacks else list(gpus)
    if not gpus:
        return [ProbeResult("host", GPU_HEALTH, T0, Verdict.SKIPPED,
                            f"passive health signals not read: {why_none or 'no GPU'}")]
    results = []
    for g in gpus:
        device = (device_of or {}).get(g.index, f"gpu{g.index}")
        found = judge_gpu(g)
        details: dict[str, Any] = {"signals": g.to_dict(),
                                   "rules": sorted({s for _, s, _ in found})}
        read = [k for k in ("ecc", "row_remap", "retired_pages", "throttle", "xid")
                if k not in g.skipped]
        if not read:
            results.append(ProbeResult(device, GPU_HEALTH, T0, Verdict.SKIPPED,
                                       "NVML answered no health signal: " +
                                       "; ".join(f"{k}: {v}" for k, v in g.skipped.items()),
                                       details=details))
            continue
        top = worst((v for v, _, _ in found), default=Verdict.PASS)
        if found:
            reason = "; ".join(text for v, _, text in found if v is top) + (
                "; also " + "; ".join(text for v, _, text in found if v is not top)
                if any(v is not top for v, _, _ in found) else "")
        else:
            reason = (f"no ECC, remap, retirement, Xid or clock event over DCGM's limits "
                      f"(read: {', '.join(read)}"
                      + (f"; not on this GPU: {', '.join(sorted(g.skipped))}" if g.skipped
                         else "") + ")")
        results.append(ProbeResult(device, GPU_HEALTH, T0, top, reason, details=details))
    return results

