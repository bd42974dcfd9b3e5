"""GPU telemetry while the sustained phase loads the host: SM clock, temperature, power and
clock event ("throttle") reasons, per device, sampled in a thread of its own.

Read through NVML: nvidia-ml-py's `pynvml` where the image has it (imported only here), else
the `nvidia-smi` the NVIDIA container runtime (or GKE's driver installer, under
/usr/local/nvidia/bin) puts in GPU containers, queried as CSV. With neither, nothing is
sampled and the result says why. Node-side code: the standard library only.
"""

from __future__ import annotations

import importlib
import os
import shutil
import statistics
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from smoke.probes.backend import Device
from smoke.probes.results import Verdict

# NVML's clock event reasons (nvidia-ml-py `nvmlClocksEventReason*`, the same bits as the older
# `nvmlClocksThrottleReason*`): bit -> (name as `nvidia-smi -q` prints it, verdict when seen
# under load). Judged as Azure's node health check does (Azure/azurehpc-health-checks@6f50b1f
# customTests/azure_gpu_clock_throttling.nhc: any active reason but idle and SW power cap is
# flagged); the hardware and thermal ones fail here, the settings only warn.
THROTTLE_REASONS: tuple[tuple[int, str, Verdict], ...] = (
    (0x0001, "GPU idle", Verdict.PASS),
    (0x0002, "applications clocks setting", Verdict.WARN),
    (0x0004, "SW power cap", Verdict.PASS),
    (0x0008, "HW slowdown", Verdict.FAIL),
    (0x0010, "sync boost", Verdict.WARN),
    (0x0020, "SW thermal slowdown", Verdict.FAIL),
    (0x0040, "HW thermal slowdown", Verdict.FAIL),
    (0x0080, "HW power brake slowdown", Verdict.FAIL),
    (0x0100, "display clock setting", Verdict.WARN),
)
NVML_CLOCK_SM = 1  # nvmlClockType_t NVML_CLOCK_SM
NVML_TEMPERATURE_GPU = 0  # nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU
# nvidia-smi's query fields; drivers before R535 name the reasons clocks_throttle_reasons
# (Azure/azurehpc-health-checks@6f50b1f azure_gpu_clock_throttling.nhc picks by driver version)
SMI_FIELDS = ("pci.bus_id", "clocks.sm", "clocks.max.sm", "temperature.gpu", "power.draw",
              "enforced.power.limit", "clocks_event_reasons.active")
SMI_OLD_REASONS = "clocks_throttle_reasons.active"
SMI_KEYS = ("bus", "sm_mhz", "sm_max_mhz", "temp_c", "power_w", "power_limit_w", "reasons")
GKE_SMI = "/usr/local/nvidia/bin/nvidia-smi"  # where GKE's driver installer mounts it
SMI_TIMEOUT_S = 10.0


def reason_names(mask: int) -> list[str]:
    return [name for bit, name, _ in THROTTLE_REASONS if mask & bit]


@dataclass
class DeviceTelemetry:
    """What NVML said about one GPU while the host was loaded."""

    nvml_index: int
    sm_mhz: list[int] = field(default_factory=list)
    temp_c: list[int] = field(default_factory=list)
    power_w: list[float] = field(default_factory=list)
    reasons: list[int] = field(default_factory=list)
    sm_max_mhz: int | None = None
    power_limit_w: float | None = None
    unreadable: dict[str, str] = field(default_factory=dict)  # metric -> NVML's error

    @property
    def samples(self) -> int:
        return max(len(self.sm_mhz), len(self.temp_c), len(self.power_w), len(self.reasons))

    def reasons_seen(self) -> dict[str, int]:
        """Reason name -> in how many samples it was active."""
        out: dict[str, int] = {}
        for mask in self.reasons:
            for name in reason_names(mask):
                out[name] = out.get(name, 0) + 1
        return out

    def summary(self) -> dict[str, Any]:
        def stats(values: Sequence[float]) -> dict[str, float] | None:
            if not values:
                return None
            return {"min": min(values), "median": statistics.median(values), "max": max(values)}

        return {"nvml_index": self.nvml_index, "samples": self.samples,
                "sm_mhz": stats(self.sm_mhz), "sm_max_mhz": self.sm_max_mhz,
                "temp_c": stats(self.temp_c), "power_w": stats(self.power_w),
                "power_limit_w": self.power_limit_w, "reasons_seen": self.reasons_seen(),
                "unreadable": dict(self.unreadable)}


class Sampler:
    """Calls `sample()` every `interval_s` in a thread of its own from `start()` until
    `stop()`, which takes one last reading and returns what each device showed."""

    via = ""

    def __init__(self, indices: Mapping[str, int], mapping: str, interval_s: float) -> None:
        self.mapping = mapping
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.data = {dev: DeviceTelemetry(nvml_index=i) for dev, i in indices.items()}

    def sample(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self._interval_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="gpu-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, DeviceTelemetry]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()  # one reading at the end of the load, whatever the interval
        self.close()
        return self.data


class NvmlSampler(Sampler):
    """Through nvidia-ml-py (`pynvml`)."""

    via = "nvidia-ml-py"

    def __init__(self, nvml: ModuleType, handles: Mapping[str, tuple[int, Any]], mapping: str,
                 interval_s: float) -> None:
        super().__init__({dev: i for dev, (i, _) in handles.items()}, mapping, interval_s)
        self._nvml = nvml
        self._handles = dict(handles)
        self._reasons_fn = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                            or nvml.nvmlDeviceGetCurrentClocksThrottleReasons)
        for dev, (_, h) in self._handles.items():
            t = self.data[dev]
            t.sm_max_mhz = self._read(t, "sm_max_mhz", nvml.nvmlDeviceGetMaxClockInfo, h,
                                      NVML_CLOCK_SM)
            limit = self._read(t, "power_limit_w", nvml.nvmlDeviceGetEnforcedPowerLimit, h)
            t.power_limit_w = None if limit is None else limit / 1000.0

    def _read(self, t: DeviceTelemetry, metric: str, fn: Any, *args: Any) -> Any:
        if metric in t.unreadable:
            return None
        try:
            return fn(*args)
        except self._nvml.NVMLError as exc:  # e.g. Not Supported on this GPU: say so once
            t.unreadable[metric] = str(exc) or type(exc).__name__
            return None

    def sample(self) -> None:
        nvml = self._nvml
        for dev, (_, h) in self._handles.items():
            t = self.data[dev]
            for metric, values, fn, args, scale in (
                    ("sm_mhz", t.sm_mhz, nvml.nvmlDeviceGetClockInfo, (h, NVML_CLOCK_SM), None),
                    ("temp_c", t.temp_c, nvml.nvmlDeviceGetTemperature,
                     (h, NVML_TEMPERATURE_GPU), None),
                    ("power_w", t.power_w, nvml.nvmlDeviceGetPowerUsage, (h,), 1000.0),
                    ("reasons", t.reasons, self._reasons_fn, (h,), None)):
                value = self._read(t, metric, fn, *args)
                if value is not None:
                    values.append(value / scale if scale else int(value))

    def close(self) -> None:
        _shutdown(self._nvml)


def smi_query(smi: str, fields: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([smi, f"--query-gpu={','.join(fields)}",
                           "--format=csv,noheader,nounits"], capture_output=True, text=True,
                          timeout=SMI_TIMEOUT_S, check=False)


def smi_rows(smi: str) -> tuple[list[list[str]], tuple[str, ...]] | str:
    """One row of SMI_FIELDS values per GPU (and the fields that worked), or why not."""
    problem = ""
    for fields in (SMI_FIELDS, (*SMI_FIELDS[:-1], SMI_OLD_REASONS)):
        try:
            done = smi_query(smi, fields)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{smi} did not answer ({type(exc).__name__}: {exc})"
        if done.returncode == 0:
            rows = [[v.strip() for v in line.split(",")]
                    for line in done.stdout.splitlines() if line.strip()]
            if rows and all(len(r) == len(fields) for r in rows):
                return rows, fields
            problem = f"unexpected output {done.stdout[:200]!r}"
        else:
            problem = (done.stderr or done.stdout).strip()[:200] or f"exit {done.returncode}"
    return f"{smi} failed: {problem}"


def _number(text: str) -> float | None:
    """nvidia-smi prints `[N/A]` or `[Not Supported]` where a figure is unavailable."""
    try:
        return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
    except ValueError:
        return None


class SmiSampler(Sampler):
    """Through `nvidia-smi --query-gpu ... --format=csv` (no Python binding needed)."""

    via = "nvidia-smi"

    def __init__(self, smi: str, rows: Mapping[str, int], fields: Sequence[str], mapping: str,
                 interval_s: float) -> None:
        super().__init__(rows, mapping, interval_s)
        self._smi, self._fields, self._row = smi, tuple(fields), dict(rows)

    def sample(self) -> None:
        got = smi_rows(self._smi)
        if isinstance(got, str):
            for t in self.data.values():
                t.unreadable.setdefault("query", got)
            return
        rows, _ = got
        for dev, i in self._row.items():
            if i >= len(rows):
                continue
            raw = dict(zip(SMI_KEYS, rows[i], strict=True))
            t = self.data[dev]
            ints: tuple[tuple[str, list[int]], ...] = (
                ("sm_mhz", t.sm_mhz), ("temp_c", t.temp_c), ("reasons", t.reasons))
            for metric, series in ints:
                value = _number(raw[metric])
                if value is None:
                    t.unreadable.setdefault(metric, raw[metric])
                else:
                    series.append(int(value))
            power = _number(raw["power_w"])
            if power is None:
                t.unreadable.setdefault("power_w", raw["power_w"])
            else:
                t.power_w.append(power)
            sm_max, limit = _number(raw["sm_max_mhz"]), _number(raw["power_limit_w"])
            t.sm_max_mhz = t.sm_max_mhz or (int(sm_max) if sm_max else None)
            t.power_limit_w = t.power_limit_w or limit


def _bus(bus_id: object) -> str:
    """NVML's `00000000:04:00.0` (bytes or str) -> `0000:04:00`, as `Device.pci` has it."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
    domain, bus, rest = text.strip().lower().split(":")
    return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(rest.split('.')[0], 16):02x}"


def _map(gpus: Sequence[Device], buses: Sequence[str]) -> tuple[dict[str, int], str] | str:
    """Our GPUs -> the telemetry's device index: by PCI bus id, else by order when the counts
    agree (a framework that tells no bus id), else why not."""
    by_bus = {b: i for i, b in enumerate(buses)}
    if all(d.pci in by_bus for d in gpus):
        return {d.id: by_bus[d.pci] for d in gpus if d.pci}, "pci bus id"
    if len(buses) == len(gpus):
        return {d.id: d.index for d in gpus}, "index"
    return (f"not sampled: NVML shows {len(buses)} GPUs and the framework {len(gpus)}, and "
            "their PCI bus ids do not match")


def _find_smi() -> str | None:
    found = shutil.which("nvidia-smi")
    if found:
        return found
    return GKE_SMI if os.access(GKE_SMI, os.X_OK) else None


def open_telemetry(devices: Sequence[Device], interval_s: float,
                   nvml: ModuleType | None = None,
                   smi: str | None = None) -> tuple[Sampler | None, str]:
    """A sampler for the GPUs among `devices`, or None and why nothing will be sampled.
    `nvml` stands in for the `pynvml` module and `smi` for the nvidia-smi path (tests); by
    default `pynvml` is imported here, and nvidia-smi looked up when it cannot be."""
    gpus = [d for d in devices if d.platform == "gpu"]
    if not gpus:
        kinds = ", ".join(sorted({d.platform.upper() for d in devices})) or "no"
        return None, (f"not sampled: {kinds} devices; clocks, power and throttle reasons are "
                      "read through NVML, which only NVIDIA GPUs have")
    if nvml is None and smi is None:
        try:
            nvml = importlib.import_module("pynvml")  # nvidia-ml-py, optional
        except ImportError:
            smi = _find_smi()
            if smi is None:
                return None, ("not sampled: neither nvidia-ml-py (`pynvml`) nor nvidia-smi is "
                              "in this image; `pip install nvidia-ml-py` to sample SM clocks, "
                              "temperature, power and throttle reasons")
    if nvml is None and smi is not None:
        return _open_smi(gpus, smi, interval_s)
    assert nvml is not None
    return _open_nvml(gpus, nvml, interval_s)


def _open_nvml(gpus: Sequence[Device], nvml: ModuleType,
               interval_s: float) -> tuple[Sampler | None, str]:
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, f"not sampled: NVML did not initialise ({type(exc).__name__}: {exc})"
    try:
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        buses = [_bus(nvml.nvmlDeviceGetPciInfo(h).busId) for h in handles]
    except Exception as exc:
        _shutdown(nvml)
        return None, f"not sampled: NVML listed no devices ({type(exc).__name__}: {exc})"
    mapped = _map(gpus, buses)
    if isinstance(mapped, str):
        _shutdown(nvml)
        return None, mapped
    indices, how = mapped
    return NvmlSampler(nvml, {d: (i, handles[i]) for d, i in indices.items()}, how,
                       interval_s), ""


def _open_smi(gpus: Sequence[Device], smi: str,
              interval_s: float) -> tuple[Sampler | None, str]:
    got = smi_rows(smi)
    if isinstance(got, str):
        return None, f"not sampled: {got}"
    rows, fields = got
    try:
        buses = [_bus(r[0]) for r in rows]
    except ValueError:
        return None, f"not sampled: {smi} printed no PCI bus ids ({rows[0][0]!r})"
    mapped = _map(gpus, buses)
    if isinstance(mapped, str):
        return None, mapped
    indices, how = mapped
    return SmiSampler(smi, indices, fields, how, interval_s), ""


def _shutdown(nvml: ModuleType) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass
