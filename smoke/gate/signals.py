"""What other agents and the DCGM exporter already say about a proven node, judged between
proofs: re-prove it, quarantine it, or only note it. Pure functions, no API calls: the gate
reads the node (its `status.conditions`) and the exporter's text and hands them here.

Node conditions set by agents the clouds run on GPU nodes (each read 2026-11-28):
- EKS node monitoring agent: `AcceleratedHardwareReady` False (docs.aws.amazon.com/eks/latest/
  userguide/node-health.html; reasons `NvidiaXID<code>Error` for its WellKnownXidCodes,
  aws/eks-node-monitoring-agent#272; `NvidiaDeviceCountMismatch` Fatal, #94; `NvidiaRowRemap
  Failure`, #246). Two reasons are the agent's own state, not the GPU's: `DCGMError` (it could
  not reach nv-hostengine; sticky until its pod restarts, #266, containers-roadmap#2763) and
  `DCGMHealthCode122` (DCGM_FR_IMEX_UNHEALTHY, which DCGM raises on every node that is not a
  multi-node NVLink system, #63): re-prove, never quarantine, on their word.
- GKE's NVIDIA device plugin: `XidCriticalError` True, the Xids in the reason as JSON
  (`{"31":true}`, GoogleCloudPlatform/container-engine-accelerators#497).
- AKS node-problem-detector GPU plugins (learn.microsoft.com/azure/aks/node-problem-detector):
  `GPUMissing`, `NVLinkStatusInactive`, `XIDErrors` (the node's own condition reads `XIDError`,
  Azure/AgentBaker#8797), `IBLinkFlapping`, `GPUClockThrottling`, `UnhealthyNvidiaDevicePlugin`,
  each True when the problem is there.
- NVIDIA NVSentinel's GPU health monitor: `Gpu<Subsystem>Watch` True with DCGM's error code in
  the message (`GpuNvlinkWatch`, `GpuNvswitchFatalWatch`, ...; NVIDIA/aicr#2641, where
  DCGM_FR_IMEX_UNHEALTHY on idle GB300 nodes with no ComputeDomain was no fault).

The DCGM exporter's metrics (names from NVIDIA/dcgm-exporter@d5e5f510 etc/default-counters.csv;
the ECC, retired-page and NVLink error families are commented out there, so a node shows them
only where the exporter's counters file enables them) are judged by DCGM's own health-watch
limits (smoke.probes.gpu_health.RULES): a rule that FAILs quarantines, one that WARNs re-proves.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from smoke.probes.gpu_health import (
    DCGM_MAX_NVLINK_CRC_PER_S,
    DCGM_MAX_RETIRED_PAGES,
    DCGM_MAX_ROW_REMAP_UNCORRECTABLE,
    XID_CRITICAL,
)

QUARANTINE, REPROVE, NOTE = "quarantine", "reprove", "note"
_RANK = {NOTE: 0, REPROVE: 1, QUARANTINE: 2}
AS_OF = "2026-11-28"


@dataclass(frozen=True, slots=True)
class Signal:
    """One thing another agent or the exporter said about the node, and what the gate does."""

    action: str  # quarantine | reprove | note
    source: str  # who said it: the condition type, or the exporter's metric
    text: str  # what, in words, for the Event
    cite: str  # why this action
    gpu: str = ""  # the exporter's `gpu` label, where the signal is one GPU's
    value: float | None = None  # the counter's value as read (the exporter's signals)


def strongest(signals: Iterable[Signal]) -> str | None:
    """The action the node gets: quarantine over reprove over note; None when nothing."""
    found = [s.action for s in signals]
    return max(found, key=_RANK.__getitem__) if found else None


# -- node conditions ---------------------------------------------------------------------------
_EKS = "EKS node monitoring agent (docs.aws.amazon.com/eks/latest/userguide/node-health.html)"
_AKS = "AKS node-problem-detector (learn.microsoft.com/azure/aks/node-problem-detector)"
_GKE = "GKE NVIDIA device plugin (GoogleCloudPlatform/container-engine-accelerators#497)"
_NVS = "NVIDIA NVSentinel GPU health monitor (NVIDIA/aicr#2641)"
# AKS NPD condition type -> action when True
_AKS_CONDITIONS = {
    "GPUMissing": QUARANTINE,  # fewer GPUs than the VM size has: one fell off the bus
    "NVLinkStatusInactive": QUARANTINE,
    "XIDErrors": REPROVE, "XIDError": REPROVE,  # the message says which; re-prove judges
    "IBLinkFlapping": REPROVE,
    "GPUClockThrottling": REPROVE,
    "UnhealthyNvidiaDevicePlugin": REPROVE,
}
_EKS_AGENT_STATE = {
    "DCGMError": "the agent could not reach nv-hostengine (its own state; sticky until its pod "
                 "restarts, aws/eks-node-monitoring-agent#266)",
    "DCGMHealthCode122": "DCGM_FR_IMEX_UNHEALTHY, raised where no multi-node NVLink IMEX "
                         "daemon runs (aws/eks-node-monitoring-agent#63)",
}
_EKS_XID = re.compile(r"^NvidiaXID(?P<xid>\d+)Error$")
_NVSWITCH_FATAL = "GpuNvswitchFatalWatch"
_IMEX = "DCGM_FR_IMEX_UNHEALTHY"


def _xid_action(xids: Sequence[int]) -> str:
    return QUARANTINE if any(x in XID_CRITICAL for x in xids) else REPROVE


def judge_conditions(conditions: Sequence[Mapping[str, Any]], *, mnnvl: bool = False,
                     ) -> list[Signal]:
    """The signals in a node's `status.conditions` (each a dict: type, status, reason,
    message), from the agents above; conditions no agent above sets are left to Kubernetes.
    `mnnvl`: the node is in a multi-node NVLink domain (GB200/GB300 NVL72), where an IMEX
    fault is the fabric's, not a false alarm."""
    out: list[Signal] = []
    for c in conditions:
        ctype, status = str(c.get("type", "")), str(c.get("status", ""))
        reason, message = str(c.get("reason", "")), str(c.get("message", ""))
        said = f"{ctype}={status}" + (f" ({reason})" if reason else "") + (
            f": {message}" if message else "")
        if ctype == "AcceleratedHardwareReady" and status == "False":
            if reason in _EKS_AGENT_STATE and not (reason == "DCGMHealthCode122" and mnnvl):
                out.append(Signal(REPROVE, ctype, said, f"{_EKS}: {_EKS_AGENT_STATE[reason]}"))
            elif (m := _EKS_XID.match(reason)) is not None:
                out.append(Signal(_xid_action([int(m.group("xid"))]), ctype, said,
                                  f"{_EKS}: Xid {m.group('xid')}; DCGM's devastating Xids "
                                  "quarantine (smoke.probes.gpu_health.XID_CRITICAL)"))
            else:
                out.append(Signal(QUARANTINE, ctype, said, f"{_EKS}: AcceleratedHardwareReady"
                                  "=False is the agent's fatal GPU condition (node auto repair "
                                  "replaces the node on it)"))
        elif ctype == "XidCriticalError" and status == "True":
            xids = _gke_xids(reason)
            out.append(Signal(_xid_action(xids) if xids else REPROVE, ctype, said,
                              f"{_GKE}: Xids {xids or 'unnamed'}"))
        elif ctype in _AKS_CONDITIONS and status == "True":
            out.append(Signal(_AKS_CONDITIONS[ctype], ctype, said, _AKS))
        elif ctype.startswith("Gpu") and ctype.endswith("Watch") and status == "True":
            if _IMEX in message and not mnnvl:
                out.append(Signal(NOTE, ctype, said, f"{_NVS}: {_IMEX} where no IMEX daemon "
                                  "runs (no ComputeDomain) is no fault"))
            else:
                out.append(Signal(QUARANTINE if ctype == _NVSWITCH_FATAL else REPROVE, ctype,
                                  said, _NVS))
    return out


def _gke_xids(reason: str) -> list[int]:
    """`{"31":true}` -> [31]; anything else -> []."""
    try:
        parsed = json.loads(reason)
    except ValueError:
        return []
    if not isinstance(parsed, dict):
        return []
    return sorted(int(k) for k, v in parsed.items() if str(k).isdigit() and v)


# -- the DCGM exporter -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: dict[str, str] = field(hash=False)
    value: float


_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+"
                     r"(?P<value>\S+)(?:\s+\d+)?\s*$")
_LABEL = re.compile(r'(?P<k>[A-Za-z_][A-Za-z0-9_]*)="(?P<v>(?:[^"\\]|\\.)*)"\s*,?\s*')
# DCGM's blank values (DCGM_INT64_BLANK and kin, 2^63 - ...) as the exporter prints them
_BLANK_FROM = 9.0e18
MAX_METRICS_BYTES = 16 * 2**20  # a node's exporter text: 8 GPUs x ~100 series is ~100 KiB


def parse_metrics(text: str) -> list[Sample]:
    """The samples of a Prometheus text exposition (the exporter's /metrics); comments, blank
    DCGM values and lines that are not samples are skipped. ValueError past MAX_METRICS_BYTES."""
    if len(text) > MAX_METRICS_BYTES:
        raise ValueError(f"the exporter's text is {len(text):,} characters; read up to "
                         f"{MAX_METRICS_BYTES:,}")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        try:
            value = float(m.group("value"))
        except ValueError:
            continue
        if math.isnan(value) or abs(value) >= _BLANK_FROM:
            continue
        labels = {lm.group("k"): lm.group("v") for lm in _LABEL.finditer(m.group("labels") or "")}
        out.append(Sample(m.group("name"), labels, value))
    return out


_DCGM_HW = "NVIDIA/DCGM@72fa3fea:modules/health/DcgmHealthWatch.cpp"


def _gpu(s: Sample) -> str:
    return s.labels.get("gpu", "?")


def _by_gpu(samples: Iterable[Sample], name: str) -> dict[str, float]:
    """The largest value of `name` per GPU (MIG instances of one GPU repeat its counters)."""
    out: dict[str, float] = {}
    for s in samples:
        if s.name == name:
            out[_gpu(s)] = max(out.get(_gpu(s), s.value), s.value)
    return out


def judge_exporter(samples: Sequence[Sample], previous: Sequence[Sample] = (), *,
                   elapsed_s: float | None = None) -> list[Signal]:
    """What the exporter's counters say, per GPU, by DCGM's health-watch limits; counters that
    DCGM judges by their increase (NVLink replay, recovery, CRC) need `previous` (the last
    reading) and, for the CRC rate, `elapsed_s` between the two."""
    out: list[Signal] = []

    def add(action: str, metric: str, gpu: str, text: str, cite: str) -> None:
        value = _by_gpu(samples, metric).get(gpu)
        out.append(Signal(action, metric, f"GPU {gpu}: {text}", cite, gpu, value))

    for gpu, v in _by_gpu(samples, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL").items():
        if v > 0:
            add(QUARANTINE, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", gpu, f"{v:g} uncorrectable ECC "
                "errors since the driver loaded", f"{_DCGM_HW} MonitorMem: > 0 is FAIL")
    for gpu, v in _by_gpu(samples, "DCGM_FI_DEV_ROW_REMAP_FAILURE").items():
        if v > 0:
            add(QUARANTINE, "DCGM_FI_DEV_ROW_REMAP_FAILURE", gpu, "a row remapping failed",
                f"{_DCGM_HW} MonitorMem: DCGM_FI_DEV_ROW_REMAP_FAILED > 0 is FAIL")
    before_rows = _by_gpu(previous, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS")
    for gpu, v in _by_gpu(samples, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS").items():
        if v >= DCGM_MAX_ROW_REMAP_UNCORRECTABLE:
            add(REPROVE, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", gpu, f"{v:g} rows remapped "
                "for uncorrectable errors", f"{_DCGM_HW} MonitorMem: >= "
                f"{DCGM_MAX_ROW_REMAP_UNCORRECTABLE} is WARN")
        elif gpu in before_rows and v > before_rows[gpu]:
            add(REPROVE, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", gpu, f"{v - before_rows[gpu]:g}"
                " more rows remapped for uncorrectable errors since the last reading (a remap "
                "waits for a GPU reset)", "NVIDIA A100 GPU memory error management: a new remap "
                "takes effect at the next reset")
    for gpu, v in _by_gpu(samples, "DCGM_FI_DEV_RETIRED_PENDING").items():
        if v > 0:
            add(REPROVE, "DCGM_FI_DEV_RETIRED_PENDING", gpu, "pages wait to be retired",
                f"{_DCGM_HW} MonitorMem: pending retirement is WARN")
    retired = _by_gpu(samples, "DCGM_FI_DEV_RETIRED_SBE")
    for gpu, v in _by_gpu(samples, "DCGM_FI_DEV_RETIRED_DBE").items():
        total = v + retired.get(gpu, 0.0)
        if total >= DCGM_MAX_RETIRED_PAGES:
            add(QUARANTINE, "DCGM_FI_DEV_RETIRED_DBE", gpu, f"{total:g} pages retired",
                f"{_DCGM_HW} MonitorMem: >= {DCGM_MAX_RETIRED_PAGES} is FAIL")
    out += _judge_xids(samples, previous)
    out += _judge_nvlink(samples, previous, elapsed_s)
    return out


def _judge_xids(samples: Sequence[Sample], previous: Sequence[Sample]) -> list[Signal]:
    """DCGM_FI_DEV_XID_ERRORS is the last Xid a GPU raised (a gauge that keeps it until the
    exporter restarts, NVIDIA/dcgm-exporter#500): a value already seen in `previous` is the
    same event, not a new one. The active-Xid families (DCGM_EXP_XID_ERRORS_COUNT, as
    DCGM_FI_DEV_XID_ERRORS_ACTIVE in dcgm-exporter#239) name the Xid in a label."""
    out = []
    last_before = _by_gpu(previous, "DCGM_FI_DEV_XID_ERRORS")
    for gpu, v in _by_gpu(samples, "DCGM_FI_DEV_XID_ERRORS").items():
        xid = int(v)
        if xid and last_before.get(gpu) != v:
            out.append(Signal(_xid_action([xid]), "DCGM_FI_DEV_XID_ERRORS",
                              f"GPU {gpu}: Xid {xid}", f"{_DCGM_HW} BuildXidMappings: "
                              "devastating Xids are FAIL, the others WARN", gpu, v))
    for s in samples:
        if s.name in ("DCGM_EXP_XID_ERRORS_COUNT", "DCGM_FI_DEV_XID_ERRORS_ACTIVE") and \
                s.value > 0 and s.labels.get("xid", "").isdigit():
            xid = int(s.labels["xid"])
            out.append(Signal(_xid_action([xid]), s.name, f"GPU {_gpu(s)}: Xid {xid} x"
                              f"{s.value:g} in the exporter's window",
                              f"{_DCGM_HW} BuildXidMappings", _gpu(s), s.value))
    return out


_NVLINK = (("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "NVLink replays"),
           ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "NVLink recoveries"))
_CRC = ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL")


def _judge_nvlink(samples: Sequence[Sample], previous: Sequence[Sample],
                  elapsed_s: float | None) -> list[Signal]:
    """DCGM MonitorNVLink: an increase >= 1 of replays or recoveries during the watch is FAIL;
    CRC errors fail at >= 100 per second, any other increase warns."""
    if not previous:
        return []
    out = []
    for metric, what in _NVLINK:
        before = _by_gpu(previous, metric)
        for gpu, v in _by_gpu(samples, metric).items():
            if gpu in before and v - before[gpu] >= 1:
                out.append(Signal(QUARANTINE, metric, f"GPU {gpu}: {v - before[gpu]:g} {what} "
                                  "since the last reading", f"{_DCGM_HW} MonitorNVLink: an "
                                  "increase >= 1 is FAIL", gpu, v))
    crc_now = {g: sum(_by_gpu(samples, m).get(g, 0.0) for m in _CRC)
               for m in _CRC for g in _by_gpu(samples, m)}
    crc_before = {g: sum(_by_gpu(previous, m).get(g, 0.0) for m in _CRC)
                  for m in _CRC for g in _by_gpu(previous, m)}
    for gpu, v in crc_now.items():
        grew = v - crc_before.get(gpu, v)
        if grew >= 1:
            rate = grew / elapsed_s if elapsed_s else None
            fails = rate is not None and rate >= DCGM_MAX_NVLINK_CRC_PER_S
            out.append(Signal(QUARANTINE if fails else REPROVE, _CRC[0], f"GPU {gpu}: {grew:g}"
                              " NVLink CRC errors since the last reading" + (
                                  f" ({rate:,.1f}/s)" if rate is not None else ""),
                              f"{_DCGM_HW} MonitorNVLink: CRC errors fail at >= "
                              f"{DCGM_MAX_NVLINK_CRC_PER_S:g}/s, any increase warns", gpu, v))
    return out


def pod_proxy_path(namespace: str, pod: str, port: int = 9400, path: str = "metrics") -> str:
    """The API server's proxy to one exporter pod (the one on the node: a Service's proxy
    reaches whichever pod it picks): `/api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy/<path>`
    (Kubernetes API: core/v1 pods/proxy; RBAC verb `get` on `pods/proxy`). 9400 is the
    exporter's port (NVIDIA/dcgm-exporter chart's default)."""
    return f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy/{path}"
