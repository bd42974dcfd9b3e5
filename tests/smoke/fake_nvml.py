"""A stand-in for nvidia-ml-py's `pynvml`: the functions smoke.probes.gpu_health calls, answering
from values recorded on real GPUs (`nvidia-smi -q` sections, parsed by `gpu_from_smi_q`). A
section the recording lacks, or shows as N/A, answers NVML_ERROR_NOT_SUPPORTED, as NVML does."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


class NVMLError(Exception):
    def __init__(self, value: int, text: str) -> None:
        super().__init__(text)
        self.value = value


NOT_SUPPORTED = NVMLError(3, "Not Supported")  # NVML_ERROR_NOT_SUPPORTED
TIMEOUT = 10  # NVML_ERROR_TIMEOUT


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    ecc: dict[tuple[int, int], int] | None = None  # (error type, counter type) -> count
    rows: tuple[int, int, int, int] | None = None  # correctable, uncorrectable, pending, failed
    retired: dict[int, int] | None = None  # cause -> pages
    retired_pending: int | None = None
    reasons: int | None = None
    xids: list[int] = field(default_factory=list)  # raised while T0 listens


@dataclass
class _Event:
    device: Any
    eventData: int


class FakeNvml:
    """`pynvml` with the GPUs given; `without` drops functions an older nvidia-ml-py lacks."""

    NVMLError = NVMLError

    def __init__(self, gpus: list[FakeGpu], *, without: tuple[str, ...] = ()) -> None:
        self.gpus = gpus
        self._without = without
        self._events: list[_Event] = []

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml") and name in object.__getattribute__(self, "_without"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:
        return self.gpus[i]

    def nvmlDeviceGetName(self, h: FakeGpu) -> str:
        return h.name

    def nvmlDeviceGetTotalEccErrors(self, h: FakeGpu, etype: int, ctype: int) -> int:
        if h.ecc is None or (etype, ctype) not in h.ecc:
            raise NOT_SUPPORTED
        return h.ecc[(etype, ctype)]

    def nvmlDeviceGetRemappedRows(self, h: FakeGpu) -> tuple[int, int, int, int]:
        if h.rows is None:
            raise NOT_SUPPORTED
        return h.rows

    def nvmlDeviceGetRetiredPages(self, h: FakeGpu, cause: int) -> list[int]:
        if h.retired is None:
            raise NOT_SUPPORTED
        return list(range(h.retired.get(cause, 0)))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: FakeGpu) -> int:
        if h.retired_pending is None:
            raise NOT_SUPPORTED
        return h.retired_pending

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: FakeGpu) -> int:
        if h.reasons is None:
            raise NOT_SUPPORTED
        return h.reasons

    # the name before R535: the same bits
    nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons

    def nvmlEventSetCreate(self) -> object:
        return object()

    def nvmlDeviceRegisterEvents(self, h: FakeGpu, types: int, events: object) -> None:
        self._events += [_Event(h, x) for x in h.xids]

    def nvmlEventSetWait_v2(self, events: object, timeout_ms: int) -> _Event:
        if not self._events:
            raise NVMLError(TIMEOUT, "Timeout")
        return self._events.pop(0)

    def nvmlEventSetFree(self, events: object) -> None:
        pass


_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[^:]+?)\s+:\s*(?P<value>.*?)\s*$")


def _sections(text: str) -> dict[str, str]:
    """`Section/Sub/Key` -> value of an `nvidia-smi -q` text (its indentation is the nesting)."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        m = _LINE.match(raw)
        if m is None:
            stack.append((indent, raw.strip()))
            continue
        out["/".join([s for _, s in stack] + [m.group("key").strip()])] = m.group("value")
    return out


def _int(value: str | None) -> int | None:
    if value is None or not value.strip().split()[0].isdigit():
        return None
    return int(value.split()[0])


def gpu_from_smi_q(text: str) -> FakeGpu:
    """One GPU's NVML answers from its `nvidia-smi -q` text (sections nested by indentation,
    under `GPU <bus>` or bare). N/A and missing sections are NVML_ERROR_NOT_SUPPORTED."""
    s = {k.split("/", 1)[1] if k.startswith("GPU ") and "/" in k else k: v
         for k, v in _sections(text).items()}
    g = FakeGpu(name=s.get("Product Name", ""))
    ecc = {}
    for ctype, scope in ((0, "Volatile"), (1, "Aggregate")):
        for etype, kind in ((0, "DRAM Correctable"), (1, "DRAM Uncorrectable")):
            v = _int(s.get(f"ECC Errors/{scope}/{kind}"))
            if v is not None:
                ecc[(etype, ctype)] = v
    g.ecc = ecc or None
    corr, unc = _int(s.get("Remapped Rows/Correctable Error")), _int(
        s.get("Remapped Rows/Uncorrectable Error"))
    if unc is not None:
        g.rows = (corr or 0, unc, int(s.get("Remapped Rows/Pending") == "Yes"),
                  int(s.get("Remapped Rows/Remapping Failure Occurred") == "Yes"))
    sbe, dbe = _int(s.get("Retired Pages/Single Bit ECC")), _int(
        s.get("Retired Pages/Double Bit ECC"))
    if sbe is not None or dbe is not None:
        g.retired = {0: sbe or 0, 1: dbe or 0}
    pending = s.get("Retired Pages/Pending Page Blacklist")
    g.retired_pending = {"Yes": 1, "No": 0}.get(pending or "")
    names = {"Idle": 0x1, "Applications Clocks Setting": 0x2, "SW Power Cap": 0x4,
             "HW Slowdown": 0x8, "Sync Boost": 0x10, "SW Thermal Slowdown": 0x20,
             "HW Thermal Slowdown": 0x40, "HW Power Brake Slowdown": 0x80,
             "Display Clock Setting": 0x100}
    mask, seen = 0, False
    for key, value in s.items():
        if key.startswith(("Clocks Event Reasons/", "Clocks Throttle Reasons/")):
            seen = True
            if value == "Active":
                mask |= names.get(key.rsplit("/", 1)[1], 0)
    g.reasons = mask if seen else None
    return g
